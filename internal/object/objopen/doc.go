// Package objopen turns a volume's storage setting (a kind and a bucket
// string, as `shoal format --storage file --bucket /var/lib/shoal` records
// them) into an object.Store. It is the one place that knows every backend,
// so that object stays free of backend imports and backends of each other.
//
// Kinds:
//
//	file   bucket is a directory (created if missing)            filestore
//	s3     bucket is a URL, see s3store.ParseURL                  s3store
//	mem    bucket names an in-process store; tests only           memstore
//
// Open returns the bare backend: wrappers (retry, checksum, ...) are added
// by the caller that wires a volume together. For s3, Open makes no request;
// callers that are about to write (format) should call Check on stores that
// implement Checker.
//
// Import rules: objopen imports object and its backend packages only.
package objopen
