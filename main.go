// Command podpath runs the podpath course platform and its tools.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/podpath/podpath/cli"
	"github.com/podpath/podpath/sandbox/hostfix"
)

func main() {
	// Installed under this name, the binary is the runc wrapper dockerd
	// calls on hosts that refuse some capabilities (see sandbox/hostfix).
	if filepath.Base(os.Args[0]) == hostfix.WrapperName {
		if err := hostfix.RunWrapper(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(cli.Execute())
}
