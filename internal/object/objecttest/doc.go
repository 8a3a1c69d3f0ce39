// Package objecttest is the conformance suite every object.Store backend and
// wrapper must pass. A backend joins it with a few lines:
//
//	func TestConformance(t *testing.T) {
//		objecttest.Run(t, func(t *testing.T) object.Store { return New() })
//	}
//
// The factory is called once per subtest and must return a store that holds
// no objects (a fresh directory, a fresh bucket or a unique key prefix), so
// subtests are independent and may run in parallel with other packages'
// tests against the same server.
//
// What the suite pins down, beyond the comments on object.Store:
//   - Get with off past the end yields an empty reader, not an error;
//     limit 0 yields an empty reader; limit < 0 reads to the end.
//   - Put over an existing key replaces it whole; a Put whose reader fails
//     (or is short) leaves no new bytes visible: an absent key stays absent
//     and an existing key keeps its old bytes.
//   - A reader opened before an overwrite yields one version whole (the
//     old one on every backend so far), never a mix.
//   - List orders by the bytes of the key (as S3 does), which for keys with
//     slashes is not the order of a naive directory walk ("a.b" < "a/b").
//   - Errors for absent keys match object.ErrNotExist with errors.Is.
//
// Keys used by the suite never make one key a path prefix of another
// ("a" and "a/b"), because a file system directory backend cannot hold both.
//
// Import rules: objecttest imports object and the standard library only, so
// any backend's tests may import it.
package objecttest
