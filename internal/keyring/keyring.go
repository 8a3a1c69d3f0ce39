package keyring

import (
	"crypto/rand"
	"errors"
	"fmt"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/chacha20poly1305"

	"shoal/internal/meta"
)

// ErrWrongSecret is returned when a secret does not open a volume's
// wrapped data key: the passphrase or key file is not the volume's.
var ErrWrongSecret = errors.New("wrong passphrase or key file")

// Names recorded in meta.Encryption.
const (
	Cipher = "xchacha20-poly1305"
	KDF    = "argon2id"
)

// Default argon2id cost: 3 passes over 64 MiB with 2 lanes, about 0.2 s
// on the 2-core test machine, paid once per mount or admin command (RFC
// 9106's second recommended setting, with the machine's lane count).
const (
	defaultTime   = 3
	defaultMemory = 64 << 10 // KiB
	defaultLanes  = 2
	keySize       = chacha20poly1305.KeySize
	saltSize      = 16
)

// New makes a random data key and returns its settings
// (the key wrapped under secret) and the key.
func New(secret []byte) (meta.Encryption, []byte, error) {
	dataKey := make([]byte, keySize)
	if _, err := rand.Read(dataKey); err != nil {
		return meta.Encryption{}, nil, fmt.Errorf("keyring: %w", err)
	}
	e, err := wrap(dataKey, secret)
	return e, dataKey, err
}

// Open unwraps the data key of e with secret; ErrWrongSecret if secret is
// not the one e was wrapped with.
func Open(e meta.Encryption, secret []byte) ([]byte, error) {
	if e.Cipher != Cipher || e.KDF != KDF {
		return nil, fmt.Errorf("keyring: unsupported cipher %q or key derivation %q", e.Cipher, e.KDF)
	}
	if len(e.Salt) != saltSize || e.Time == 0 || e.Memory == 0 || e.Lanes == 0 || e.Memory > 4<<20 || e.Time > 100 {
		return nil, errors.New("keyring: bad key derivation settings")
	}
	aead, err := chacha20poly1305.NewX(derive(secret, e))
	if err != nil {
		return nil, err
	}
	if len(e.WrappedKey) != aead.NonceSize()+keySize+aead.Overhead() {
		return nil, fmt.Errorf("keyring: wrapped key of %d bytes", len(e.WrappedKey))
	}
	nonce, sealed := e.WrappedKey[:aead.NonceSize()], e.WrappedKey[aead.NonceSize():]
	key, err := aead.Open(nil, nonce, sealed, wrapAAD)
	if err != nil {
		return nil, ErrWrongSecret
	}
	return key, nil
}

// Rewrap opens e with oldSecret and wraps its data key under newSecret
// with a fresh salt: the secret changes, the data key and every object
// stay.
func Rewrap(e meta.Encryption, oldSecret, newSecret []byte) (meta.Encryption, error) {
	key, err := Open(e, oldSecret)
	if err != nil {
		return meta.Encryption{}, err
	}
	return wrap(key, newSecret)
}

// wrap seals dataKey under a key derived from secret with a new salt.
func wrap(dataKey, secret []byte) (meta.Encryption, error) {
	if len(secret) == 0 {
		return meta.Encryption{}, errors.New("keyring: empty passphrase or key file")
	}
	e := meta.Encryption{Cipher: Cipher, KDF: KDF, Salt: make([]byte, saltSize),
		Time: defaultTime, Memory: defaultMemory, Lanes: defaultLanes}
	nonce := make([]byte, chacha20poly1305.NonceSizeX)
	if _, err := rand.Read(e.Salt); err != nil {
		return e, fmt.Errorf("keyring: %w", err)
	}
	if _, err := rand.Read(nonce); err != nil {
		return e, fmt.Errorf("keyring: %w", err)
	}
	aead, err := chacha20poly1305.NewX(derive(secret, e))
	if err != nil {
		return e, err
	}
	e.WrappedKey = aead.Seal(nonce, nonce, dataKey, wrapAAD)
	return e, nil
}

// derive is the key-encryption key of secret under e's settings.
func derive(secret []byte, e meta.Encryption) []byte {
	return argon2.IDKey(secret, e.Salt, e.Time, e.Memory, e.Lanes, keySize)
}

// wrapAAD is the associated data of a wrapped key. It does not name the
// volume's uuid: a copy made by 'shoal load' gets a new uuid and keeps the
// data key (its blocks are the source's).
var wrapAAD = []byte("shoal data key v1")
