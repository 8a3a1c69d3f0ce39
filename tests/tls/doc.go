// Package tls proves that Shoal talks TLS to its servers: a dedicated
// PostgreSQL, Redis and MinIO, each serving a certificate from a CA the
// test makes, are used by a real format and mount of the shoal binary with
// the CA given (sslrootcert=, ca=, AWS_CA_BUNDLE), and refused, with a
// message that says what to fix, when the CA or the host name is wrong.
package tls
