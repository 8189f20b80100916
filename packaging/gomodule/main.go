// Command gomodule writes one version of a Go module into a folder laid out
// as a module proxy (the GOPROXY protocol, served with GOPROXY=file://DIR):
//
//	DIR/<escaped module path>/@v/list
//	DIR/<escaped module path>/@v/<version>.info
//	DIR/<escaped module path>/@v/<version>.mod
//	DIR/<escaped module path>/@v/<version>.zip
//
// The zip is made by golang.org/x/mod/zip from the module's folder, which
// checks Go's limits (500 MB for the zip, file names, no go.mod below the
// root) and leaves out what the go command leaves out (vcs folders, nested
// modules). `make dist-go` runs it from packaging/go.sh.
//
// Usage: go run . -dir MODULE_DIR -version vX.Y.Z -time RFC3339 -out PROXY_DIR
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

func main() {
	dir := flag.String("dir", "", "the module's folder (with its go.mod)")
	version := flag.String("version", "", "the version to write, vX.Y.Z")
	stamp := flag.String("time", "", "the version's time in the .info file (RFC 3339)")
	out := flag.String("out", "", "the module proxy's folder")
	flag.Parse()
	if err := run(*dir, *version, *stamp, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gomodule:", err)
		os.Exit(1)
	}
}

func run(dir, version, stamp, out string) error {
	if dir == "" || version == "" || stamp == "" || out == "" {
		return errors.New("-dir, -version, -time and -out are all needed")
	}
	when, err := time.Parse(time.RFC3339, stamp)
	if err != nil {
		return fmt.Errorf("-time: %w", err)
	}
	goMod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	path := modfile.ModulePath(goMod)
	if path == "" {
		return fmt.Errorf("%s/go.mod names no module", dir)
	}
	mod := module.Version{Path: path, Version: version}
	if err := module.Check(mod.Path, mod.Version); err != nil {
		return err
	}
	escapedPath, err := module.EscapePath(mod.Path)
	if err != nil {
		return err
	}
	escapedVersion, err := module.EscapeVersion(mod.Version)
	if err != nil {
		return err
	}
	versions := filepath.Join(out, filepath.FromSlash(escapedPath), "@v")
	if err := os.MkdirAll(versions, 0o755); err != nil {
		return err
	}
	base := filepath.Join(versions, escapedVersion)

	zipPath := base + ".zip"
	if err := writeZip(zipPath, mod, dir); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{mod.Version, when.UTC()})
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".info", info, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(base+".mod", goMod, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(versions, "list"), []byte(mod.Version+"\n"), 0o644); err != nil {
		return err
	}
	stat, err := os.Stat(zipPath)
	if err != nil {
		return err
	}
	fmt.Printf("gomodule: %s@%s: %s, %.1f MB (Go's limit: 500 MB)\n",
		mod.Path, mod.Version, zipPath, float64(stat.Size())/(1<<20))
	return nil
}

func writeZip(zipPath string, mod module.Version, dir string) error {
	f, err := os.Create(zipPath)
	if err != nil {
		return err
	}
	if err := modzip.CreateFromDir(f, mod, dir); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
