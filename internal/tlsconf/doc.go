// Package tlsconf builds the client TLS settings Shoal uses towards its
// metadata servers and object stores, and explains TLS failures.
//
// Redis (rediss:// with ca=, cert=, key=) and S3 (https:// with ca= or
// AWS_CA_BUNDLE) both name their files with Files; PostgreSQL has its own
// sslrootcert/sslcert/sslkey parameters, handled by its driver, and only
// uses Explain.
//
// Policy, the same for every backend:
//
//   - A CA file replaces the system roots: the server must present a
//     certificate chained to a CA in that file. Without one, the system
//     roots apply.
//   - The server name is always verified (the host of the URL, which may
//     be an IP address, against the certificate's names). There is no
//     option to skip verification: a test or private CA is given with
//     the CA file instead.
//   - TLS 1.2 is the minimum.
//
// Explain turns the standard library's verification errors into a sentence
// that says what is wrong and which option fixes it; callers add it before
// the original error.
//
// Import rules: tlsconf imports the standard library only; tlstest (test
// certificates) is for tests.
package tlsconf
