// Package keyring derives, wraps and unwraps the data key of an encrypted
// volume (docs/admin.md "Encryption at rest").
//
// A volume's objects are sealed under a random 32-byte data key. The key
// is never stored in clear: meta.Encryption holds it sealed
// (XChaCha20-Poly1305) under a key-encryption key that argon2id derives
// from the user's secret (a passphrase or the bytes of a key file) and a
// random salt. (The seal does not name the volume's uuid: a copy of the
// volume made by 'shoal load' has a new uuid and the same data key.)
// Opening the wrapped key is also the check that the secret is right: a
// wrong secret fails authentication and Open returns ErrWrongSecret before
// any object is read, instead of every block reading as corrupt.
//
// Rotating the secret (Rewrap) seals the same data key under a key derived
// from the new secret and a fresh salt; no object changes. Losing every
// secret that opens the wrapped key loses the data.
//
// Import rules: keyring imports meta (for meta.Encryption) and crypto
// packages only.
package keyring
