package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"shoal/internal/volume"
)

// passphraseEnv names the environment variable that may hold the
// passphrase of an encrypted volume. A passphrase is never taken from the
// command line, where other users see it in the process list.
const passphraseEnv = "SHOAL_PASSPHRASE"

// secretFlags are the flags that say where an encrypted volume's secret
// is. Every command that opens a volume's data gets it through them.
type secretFlags struct {
	keyFile, passFile string
}

func (s *secretFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&s.passFile, "passphrase-file", "", "file holding the passphrase of an encrypted volume (its first line; default: $"+passphraseEnv+")")
	fl.StringVar(&s.keyFile, "key-file", "", "file whose bytes are the key of an encrypted volume")
}

// given reports whether a secret source was named (a flag or the
// environment variable).
func (s *secretFlags) given() bool {
	return s.keyFile != "" || s.passFile != "" || os.Getenv(passphraseEnv) != ""
}

// secret returns the lazy secret for volume.Options.
func (s *secretFlags) secret() volume.Secret {
	return func() ([]byte, error) { return readSecret(s.keyFile, s.passFile) }
}

// readSecret reads the secret from a key file, a passphrase file or the
// environment, in that order of precedence; exactly one file flag may be
// given.
func readSecret(keyFile, passFile string) ([]byte, error) {
	switch {
	case keyFile != "" && passFile != "":
		return nil, withCode(ExitUsage, errors.New("give --key-file or --passphrase-file, not both"))
	case keyFile != "":
		b, err := os.ReadFile(keyFile)
		if err == nil && len(b) < 16 {
			err = fmt.Errorf("key file %s holds %d bytes: use at least 16 random bytes (e.g. head -c 32 /dev/urandom)", keyFile, len(b))
		}
		return b, err
	case passFile != "":
		b, err := os.ReadFile(passFile)
		if err != nil {
			return nil, err
		}
		return passphrase(b, "passphrase file "+passFile)
	case os.Getenv(passphraseEnv) != "":
		return passphrase([]byte(os.Getenv(passphraseEnv)), "$"+passphraseEnv)
	}
	return nil, volume.ErrNoSecret
}

// passphrase takes the first line of b, which must not be empty.
func passphrase(b []byte, what string) ([]byte, error) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(b) == 0 {
		return nil, fmt.Errorf("%s: empty passphrase", what)
	}
	return b, nil
}
