package s3store

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Defaults for Config fields left zero.
const (
	DefaultTimeout    = 60 * time.Second
	DefaultMaxRetries = 1 // none: object.WithRetry above is the one retry policy
)

// Config says which bucket to use and how to reach it.
type Config struct {
	// Endpoint is host[:port] of the S3 service, without scheme.
	Endpoint string
	// Secure selects https.
	Secure bool
	// Bucket is the bucket name.
	Bucket string
	// Prefix is prepended to every key: "" or a path ending in "/", so
	// several volumes or tests can share a bucket.
	Prefix string
	// Region is the signing region; "" looks it up from the bucket.
	Region string
	// VirtualHost addresses the bucket as bucket.endpoint instead of
	// endpoint/bucket (path style).
	VirtualHost bool
	// AccessKey, SecretKey and SessionToken are the credentials. ParseURL
	// fills them from the environment; when empty, New looks further
	// along the AWS chain (credentials file, instance role), else
	// requests are anonymous.
	AccessKey, SecretKey, SessionToken string
	// Timeout bounds each call, including minio-go's retries (default 60 s).
	Timeout time.Duration
	// MaxRetries is minio-go's attempt count per call (default 1: no
	// retries here; volumes retry through object.WithRetry, see volume).
	MaxRetries int
	// CreateBucket lets Check create the bucket when it is missing.
	CreateBucket bool
	// CAFile is a PEM bundle of the CAs that may sign the https server's
	// certificate, replacing the system roots; "" keeps the system roots.
	// ParseURL fills it from ca= or else AWS_CA_BUNDLE.
	CAFile string
}

// String describes the bucket without credentials.
func (c Config) String() string {
	scheme := "http"
	if c.Secure {
		scheme = "https"
	}
	if c.VirtualHost {
		return fmt.Sprintf("s3 %s://%s.%s/%s", scheme, c.Bucket, c.Endpoint, c.Prefix)
	}
	return fmt.Sprintf("s3 %s://%s/%s/%s", scheme, c.Endpoint, c.Bucket, c.Prefix)
}

// ErrURLCredentials refuses credentials in a bucket URL: URLs are stored
// in volume settings and shown by commands and ps.
var ErrURLCredentials = errors.New("credentials in the bucket URL are not accepted (they would be stored and shown): " +
	"remove KEY:SECRET@ and set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or SHOAL_S3_ACCESS_KEY and SHOAL_S3_SECRET_KEY), " +
	"or use ~/.aws/credentials (AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE) or an instance profile")

// ParseURL turns a bucket URL (see the package doc) into a Config, taking
// credentials from the environment. A URL with user info is refused
// (ErrURLCredentials).
func ParseURL(raw string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("s3store: bucket URL: %w", err)
	}
	if u.User != nil {
		return Config{}, fmt.Errorf("s3store: bucket URL %q: %w", u.Redacted(), ErrURLCredentials)
	}
	var c Config
	switch u.Scheme {
	case "http", "https":
		c, err = parseHTTP(u)
	case "s3":
		c, err = parseS3(u)
	default:
		err = fmt.Errorf("scheme %q not supported (use http, https or s3)", u.Scheme)
	}
	if err == nil {
		err = applyQuery(&c, u.Query())
	}
	if err != nil {
		return Config{}, fmt.Errorf("s3store: bucket URL %q: %w", u.Redacted(), err)
	}
	c.fromEnv()
	if c.CAFile == "" && c.Secure {
		c.CAFile = os.Getenv(EnvCABundle)
	}
	return c, nil
}

// EnvCABundle names the environment variable holding a CA bundle for https
// endpoints (the AWS SDKs' name), used when the URL has no ca=.
const EnvCABundle = "AWS_CA_BUNDLE"

// parseHTTP handles http(s)://host/bucket/prefix and AWS virtual hosts.
func parseHTTP(u *url.URL) (Config, error) {
	c := Config{Endpoint: u.Host, Secure: u.Scheme == "https"}
	if u.Host == "" {
		return c, errors.New("no host")
	}
	path := strings.Trim(u.Path, "/")
	if bucket, endpoint, region, ok := awsVirtualHost(u.Hostname()); ok {
		c.Bucket, c.Region, c.VirtualHost = bucket, region, true
		c.Endpoint = endpoint
		if u.Port() != "" {
			c.Endpoint += ":" + u.Port()
		}
		c.Prefix = dirPrefix(path)
		return c, nil
	}
	c.Bucket, c.Prefix, _ = strings.Cut(path, "/")
	c.Prefix = dirPrefix(c.Prefix)
	if c.Bucket == "" {
		return c, errors.New("no bucket in the path (want http://host:port/bucket)")
	}
	return c, nil
}

// parseS3 handles s3://bucket/prefix, meaning AWS over https.
func parseS3(u *url.URL) (Config, error) {
	c := Config{Endpoint: "s3.amazonaws.com", Secure: true, Bucket: u.Host, VirtualHost: true}
	if c.Bucket == "" {
		return c, errors.New("no bucket (want s3://bucket/prefix)")
	}
	c.Region = os.Getenv("AWS_REGION")
	if c.Region == "" {
		c.Region = os.Getenv("AWS_DEFAULT_REGION")
	}
	if c.Region != "" {
		c.Endpoint = "s3." + c.Region + ".amazonaws.com"
	}
	c.Prefix = dirPrefix(strings.Trim(u.Path, "/"))
	return c, nil
}

// awsVirtualHost splits bucket.s3[.-]region.amazonaws.com.
func awsVirtualHost(host string) (bucket, endpoint, region string, ok bool) {
	if !strings.HasSuffix(host, ".amazonaws.com") {
		return "", "", "", false
	}
	i := strings.Index(host, ".s3.")
	if i < 0 {
		i = strings.Index(host, ".s3-")
	}
	if i <= 0 {
		return "", "", "", false
	}
	bucket, endpoint = host[:i], host[i+1:]
	mid := strings.TrimSuffix(endpoint, ".amazonaws.com") // s3, s3.region, s3-region
	if r, found := strings.CutPrefix(mid, "s3."); found {
		region = r
	} else if r, found := strings.CutPrefix(mid, "s3-"); found {
		region = r
	}
	return bucket, endpoint, region, true
}

// applyQuery reads region=, style= and ca= parameters.
func applyQuery(c *Config, q url.Values) error {
	for k := range q {
		if k != "region" && k != "style" && k != "ca" {
			return fmt.Errorf("unknown parameter %q (known: region, style, ca)", k)
		}
	}
	if ca := q.Get("ca"); ca != "" {
		if !c.Secure {
			return errors.New("ca= needs an https endpoint")
		}
		c.CAFile = ca
	}
	if r := q.Get("region"); r != "" {
		c.Region = r
	}
	switch q.Get("style") {
	case "", "path":
		if q.Get("style") == "path" && c.VirtualHost {
			return errors.New("style=path with a virtual-host URL: name the bucket in the path instead")
		}
	case "virtual":
		c.VirtualHost = true
	default:
		return fmt.Errorf("style %q: want path or virtual", q.Get("style"))
	}
	return nil
}

// dirPrefix turns "a/b" into "a/b/" and "" into "".
func dirPrefix(p string) string {
	if p == "" {
		return ""
	}
	return p + "/"
}

// fromEnv fills empty credentials from SHOAL_S3_* or AWS_* variables.
func (c *Config) fromEnv() {
	if c.AccessKey != "" {
		return
	}
	for _, pair := range [][3]string{
		{"SHOAL_S3_ACCESS_KEY", "SHOAL_S3_SECRET_KEY", ""},
		{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"},
	} {
		if ak := os.Getenv(pair[0]); ak != "" {
			c.AccessKey, c.SecretKey = ak, os.Getenv(pair[1])
			if pair[2] != "" {
				c.SessionToken = os.Getenv(pair[2])
			}
			return
		}
	}
}

// iamTimeout bounds a request for instance-role credentials, which hangs
// off EC2, ECS and EKS where no metadata service answers.
const iamTimeout = 3 * time.Second

// credentials returns what the store signs with: the Config's keys when
// set, else the rest of the standard AWS chain (minio-go's providers):
// the shared credentials file (~/.aws/credentials, AWS_SHARED_CREDENTIALS_FILE,
// AWS_PROFILE), then an EC2/ECS/EKS instance role. The chain is asked once
// here: with nothing found, requests are anonymous rather than asking the
// chain again on every request.
func (c Config) credentials() *credentials.Credentials {
	if c.AccessKey != "" {
		return credentials.NewStaticV4(c.AccessKey, c.SecretKey, c.SessionToken)
	}
	client := &http.Client{Timeout: iamTimeout}
	chain := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.FileAWSCredentials{},
		&credentials.IAM{Client: client},
	})
	v, err := chain.GetWithContext(&credentials.CredContext{Client: client})
	if err != nil || v.SignerType.IsAnonymous() {
		return credentials.NewStatic("", "", "", credentials.SignatureAnonymous)
	}
	return chain
}
