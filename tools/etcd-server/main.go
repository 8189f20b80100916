// Command etcd-server is etcd's own server, built from the Go module proxy
// at the version go.mod pins, for Leasehold's tests and benchmarks: etcd's
// go.mod has replace directives, so `go install …@version` cannot build it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
