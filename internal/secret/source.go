package secret

import (
	"fmt"
	"os"
	"strings"
)

// PasswordEnv names the environment variable an engine password may come
// from.
const PasswordEnv = "SHOAL_META_PASSWORD"

// PasswordFile reads a password from path: its first line, without the
// line end. It refuses a file that group or others may read, since the
// password is then not secret on this machine.
func PasswordFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("password file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("password file: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("password file %s is readable by others (mode %04o): make it private with 'chmod 600 %s'", path, perm, path)
	}
	buf := make([]byte, 4096)
	n, err := f.Read(buf)
	if n == 0 && err != nil {
		return "", fmt.Errorf("password file %s is empty", path)
	}
	pw, _, _ := strings.Cut(string(buf[:n]), "\n")
	pw = strings.TrimSuffix(pw, "\r")
	if pw == "" {
		return "", fmt.Errorf("password file %s is empty", path)
	}
	return pw, nil
}

// EnvPassword returns the password of the environment ("" if unset) and
// registers it for masking.
func EnvPassword() string {
	pw := os.Getenv(PasswordEnv)
	Register(pw)
	return pw
}
