// Package s3store is the object.Store for S3-compatible services (AWS S3,
// MinIO, Ceph RGW, SeaweedFS, Garage, ...), built on minio-go.
//
// # Bucket URLs
//
// A store is named by one URL (see ParseURL):
//
//	http://127.0.0.1:9000/bucket            path-style, any S3-compatible server
//	http://127.0.0.1:9000/bucket/some/dir   the same, keys under "some/dir/"
//	https://bucket.s3.eu-west-1.amazonaws.com[/dir]   AWS virtual-host style
//	https://bucket.s3.amazonaws.com                   AWS, region looked up
//	s3://bucket[/dir]                                 AWS, https, region from AWS_REGION or looked up
//	https://host/bucket?style=virtual&region=r        bucket addressed as bucket.host
//
// Query parameters: region=<name> sets the signing region; style=path or
// style=virtual forces the addressing style; ca=<file> (https only) names a
// PEM bundle of the CAs that may sign the server's certificate, in place of
// the system roots (AWS_CA_BUNDLE does the same when ca= is absent). The
// server's name is always verified; a certificate that fails is explained
// and not retried (see tlsconf). Credentials come, first found
// first, from Config fields set by the caller, SHOAL_S3_ACCESS_KEY/
// SHOAL_S3_SECRET_KEY, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (+
// AWS_SESSION_TOKEN), the shared credentials file (~/.aws/credentials, or
// AWS_SHARED_CREDENTIALS_FILE and AWS_PROFILE) and an EC2/ECS/EKS instance
// role (minio-go's credential chain, asked once when the store is made).
// Never from the URL: a URL with user info (http://KEY:SECRET@host/b) is
// refused with ErrURLCredentials, because bucket URLs are stored in volume
// settings and printed. With no credentials found,
// requests are anonymous. String() never shows credentials.
//
// # Requests, timeouts and retries
//
// Each Store call is one S3 request (Get: GetObject with a Range header;
// Put: one PutObject, a single PUT for bodies up to 16 MiB; Head:
// HeadObject; Delete: DeleteObject; List: ListObjectsV2 with prefix and
// start-after, paged by up to 1000 keys). Every call is bounded by
// Config.Timeout (default 60 s), which for Get covers reading the body and
// ends at Close. minio-go itself makes Config.MaxRetries attempts (default
// 1: it does not retry, so one failed request is one error the layers above
// see and count); retries belong to object.WithRetry above this store, the
// one retry policy volumes wire (volume.OpenStore). Put reads bodies up to
// 16 MiB into memory first, which also means a body reader that fails is
// noticed before anything is sent.
//
// Error mapping: NoSuchKey → object.ErrNotExist; other 4xx answers (bad
// credentials, missing bucket, access denied) are marked object.Permanent
// so retry wrappers give up at once. Check turns the common setup mistakes
// into messages that say what is wrong.
//
// # Consistency
//
// Shoal relies on read-after-write consistency for new objects and for
// overwrites (AWS S3 and MinIO give both); blocks are immutable anyway.
// A Put that fails leaves nothing new visible: S3 stores an object only
// when the whole request body arrived.
//
// Import rules: s3store imports object, tlsconf, minio-go and the standard
// library.
package s3store
