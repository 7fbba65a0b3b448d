package conn_test

import (
	"fmt"

	"github.com/mcpfsm/mcpfsm/conn"
)

// A stdio server gets the host's PATH, HOME and the like, and what Env
// names; not the rest of the host's environment.
func ExampleChildEnv() {
	host := []string{"PATH=/usr/bin", "HOME=/home/ann", "DATABASE_URL=postgres://app:pw@db/app", "EDITOR=vi"}
	fmt.Println(conn.ChildEnv(host, []string{"API_BASE=https://api.example"}))
	fmt.Println(conn.InheritedEnv(host, nil))
	// Output:
	// [PATH=/usr/bin HOME=/home/ann API_BASE=https://api.example]
	// [PATH=/usr/bin HOME=/home/ann EDITOR=vi]
}
