// Command shoal is the Shoal distributed file system's single binary.
package main

import (
	"os"

	"shoal/internal/cli"
	"shoal/internal/secret"
)

func main() {
	secret.MaskArgv() // before anything else: ps shows no password
	os.Exit(cli.Main(os.Args))
}
