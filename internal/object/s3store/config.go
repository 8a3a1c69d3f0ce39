package s3store

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// Defaults for Config fields left zero.
const (
	DefaultTimeout    = 60 * time.Second
	DefaultMaxRetries = 3
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
	// AccessKey, SecretKey and SessionToken are the credentials; empty
	// means anonymous. ParseURL fills them from the URL or environment.
	AccessKey, SecretKey, SessionToken string
	// Timeout bounds each call, including minio-go's retries (default 60 s).
	Timeout time.Duration
	// MaxRetries is minio-go's retry count per call (default 3; 1 = none).
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

// ParseURL turns a bucket URL (see the package doc) into a Config, taking
// credentials from the URL's user info or else the environment.
func ParseURL(raw string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("s3store: bucket URL: %w", err)
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
	if u.User != nil {
		c.AccessKey = u.User.Username()
		c.SecretKey, _ = u.User.Password()
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
