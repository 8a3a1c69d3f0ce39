package volume

import (
	"context"
	"errors"
	"fmt"

	"shoal/internal/keyring"
	"shoal/internal/meta"
	"shoal/internal/object"
)

// Secret supplies the passphrase or key-file bytes of an encrypted volume.
// It is called only when the volume is encrypted, so commands ask for a
// secret only when one is needed.
type Secret func() ([]byte, error)

// ErrNoSecret is returned when an encrypted volume is opened without a
// way to get its secret.
var ErrNoSecret = errors.New("the volume is encrypted: give --passphrase-file, --key-file or SHOAL_PASSPHRASE")

// DataKey returns the data key of an encrypted volume, unwrapped with the
// secret, or nil for a plain volume. A wrong secret is refused here, before
// any object is read.
func DataKey(f meta.Format, secret Secret) ([]byte, error) {
	if f.Encryption == nil {
		return nil, nil
	}
	if secret == nil {
		return nil, fmt.Errorf("volume %q: %w", f.Name, ErrNoSecret)
	}
	s, err := secret()
	if err != nil {
		return nil, fmt.Errorf("volume %q: %w", f.Name, err)
	}
	key, err := keyring.Open(*f.Encryption, s)
	if errors.Is(err, keyring.ErrWrongSecret) {
		return nil, fmt.Errorf("%w for volume %q", err, f.Name)
	}
	return key, err
}

// BlockStore returns the store blocks go through, over plain (the raw,
// retrying store): checksummed on a plain volume, sealed on an encrypted
// one, whose AEAD tags authenticate every record and so replace the
// checksums (object/encrypt.go). Compression, when added, goes above this
// SealedStore returns the store for objects that are not blocks but hold
// the volume's contents (metadata backups): plain itself on a plain
// volume, sealed on an encrypted one.
func SealedStore(plain object.Store, dataKey []byte) (object.Store, error) {
	if dataKey == nil {
		return plain, nil
	}
	return object.WithEncryption(plain, dataKey)
}

// encryptionFor returns the encryption settings of a volume being
// formatted: new ones for a new volume given a secret, the old ones for new
// settings of an existing volume (its objects are sealed already). A plain
// volume cannot become encrypted in place: its objects are plain.
func encryptionFor(old meta.Format, existing bool, secret []byte) (*meta.Encryption, error) {
	if existing {
		if secret != nil && old.Encryption == nil {
			return nil, errors.New("--encrypt: the volume exists and is not encrypted; its objects cannot be encrypted in place (dump, format a new volume, copy the files)")
		}
		if old.Encryption != nil && secret != nil {
			if _, err := keyring.Open(*old.Encryption, secret); err != nil {
				return nil, fmt.Errorf("--encrypt: %w for the existing volume", err)
			}
		}
		return old.Encryption, nil
	}
	if secret == nil {
		return nil, nil
	}
	e, _, err := keyring.New(secret)
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// Rotate changes the secret of the encrypted volume at metaURL: the data
// key, unwrapped with oldSecret, is wrapped anew under newSecret and the
// settings are rewritten. No object changes; mounts running with the data
// key keep working.
func Rotate(ctx context.Context, metaURL string, oldSecret, newSecret Secret) error {
	eng, f, err := Load(ctx, metaURL)
	if err != nil {
		return err
	}
	defer eng.Close()
	if f.Encryption == nil {
		return fmt.Errorf("volume %q is not encrypted", f.Name)
	}
	oldS, err := oldSecret()
	if err != nil {
		return fmt.Errorf("the current secret: %w", err)
	}
	newS, err := newSecret()
	if err != nil {
		return fmt.Errorf("the new secret: %w", err)
	}
	e, err := keyring.Rewrap(*f.Encryption, oldS, newS)
	if errors.Is(err, keyring.ErrWrongSecret) {
		return fmt.Errorf("%w for volume %q (the current one is needed to rotate)", err, f.Name)
	}
	if err != nil {
		return err
	}
	f.Encryption = &e
	if err := eng.Format(ctx, f, true); err != nil {
		return fmt.Errorf("writing the rewrapped key of volume %q: %w", f.Name, err)
	}
	return nil
}
