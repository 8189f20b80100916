//go:build leasehold_testing

package locks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The shared scenarios of spec-tests/scenarios, each a subtest named after
// its file, on the embedded store with a virtual clock (LOCK-*, MANUAL-*,
// ERR-01: the contracts each file names).
func TestSharedScenariosEmbedded(t *testing.T) {
	files, err := scenarioFiles()
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files in %s: %v", scenarioDir, err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			sc, err := loadScenario(file)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if err := runScenario(sc, ""); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The shared scenarios that need no virtual clock, on a real server store process.
func TestSharedScenariosServer(t *testing.T) {
	files, err := scenarioFiles()
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, file := range files {
		sc, err := loadScenario(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if !appliesToServer(sc) {
			continue
		}
		ran++
		t.Run(sc.ID, func(t *testing.T) {
			if err := runScenario(sc, startServer(t)); err != nil {
				t.Fatal(err)
			}
		})
	}
	if ran < 4 {
		t.Fatalf("only %d scenarios ran on the server store", ran)
	}
}

// The loader refuses what the format does not know rather than skip it.
func TestScenarioLoaderRefusesTheUnknown(t *testing.T) {
	base := `{"id": "x", "contracts": ["LOCK-01"], "title": "t", "store": {"renewal": false, "push": true}, "steps": [STEP]}`
	for _, bad := range []string{
		`{"step": "levitate", "holder": "a"}`,
		`{"step": "hold", "holder": "a", "lock": "l", "key": "k", "expect": "granted", "colour": "red"}`,
		`{"step": "hold", "holder": "a", "lock": "l", "key": "k"}`,
		`{"step": "hold", "holder": "a", "lock": "l", "key": "k", "expect": "maybe"}`,
		`{"step": "expect_failed", "holder": "a", "error": "Oops"}`,
		`{"step": "expect_lost", "holder": "a", "reason": "stolen"}`,
		`{"step": "end", "holder": "a", "by": "vanish"}`,
		`{"step": "expect_granted"}`,
	} {
		path := filepath.Join(t.TempDir(), "x.json")
		if err := os.WriteFile(path, []byte(strings.Replace(base, "STEP", bad, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadScenario(path); err == nil {
			t.Errorf("loaded a scenario with %s", bad)
		}
	}
}
