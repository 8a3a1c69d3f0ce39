package s3store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	t.Setenv("SHOAL_S3_ACCESS_KEY", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv(EnvCABundle, "")
	cases := []struct {
		url  string
		want Config
	}{
		{"http://127.0.0.1:9000/bucket", Config{Endpoint: "127.0.0.1:9000", Bucket: "bucket"}},
		{"http://127.0.0.1:9000/bucket/", Config{Endpoint: "127.0.0.1:9000", Bucket: "bucket"}},
		{"https://minio.local/b/vol/one", Config{Endpoint: "minio.local", Secure: true, Bucket: "b", Prefix: "vol/one/"}},
		{"http://127.0.0.1:9000/b?region=r1", Config{Endpoint: "127.0.0.1:9000", Bucket: "b", Region: "r1"}},
		{"https://bkt.s3.eu-west-1.amazonaws.com", Config{Endpoint: "s3.eu-west-1.amazonaws.com", Secure: true, Bucket: "bkt", Region: "eu-west-1", VirtualHost: true}},
		{"https://bkt.s3.amazonaws.com/p", Config{Endpoint: "s3.amazonaws.com", Secure: true, Bucket: "bkt", Prefix: "p/", VirtualHost: true}},
		{"https://bkt.s3-us-west-2.amazonaws.com", Config{Endpoint: "s3-us-west-2.amazonaws.com", Secure: true, Bucket: "bkt", Region: "us-west-2", VirtualHost: true}},
		{"s3://bkt/dir", Config{Endpoint: "s3.amazonaws.com", Secure: true, Bucket: "bkt", Prefix: "dir/", VirtualHost: true}},
		{"http://host:9000/b?style=virtual", Config{Endpoint: "host:9000", Bucket: "b", VirtualHost: true}},
	}
	for _, c := range cases {
		got, err := ParseURL(c.url)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", c.url, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseURL(%q)\n got  %+v\n want %+v", c.url, got, c.want)
		}
	}
}

func TestParseURLErrors(t *testing.T) {
	for _, u := range []string{"ftp://x/b", "http://127.0.0.1:9000", "http:///b", "http://h/b?nope=1", "http://h/b?style=odd", "s3:///x"} {
		if _, err := ParseURL(u); err == nil {
			t.Errorf("ParseURL(%q) succeeded", u)
		}
	}
	_, err := ParseURL("http://key:supersecret@h/b?bad=1")
	if !errors.Is(err, ErrURLCredentials) || strings.Contains(err.Error(), "supersecret") {
		t.Errorf("credentials in the URL: %v, want ErrURLCredentials without the secret", err)
	}
}

func TestCredentialsFromEnv(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "aws-ak")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-sk")
	t.Setenv("AWS_SESSION_TOKEN", "tok")
	t.Setenv("SHOAL_S3_ACCESS_KEY", "")
	c, _ := ParseURL("http://h/b")
	if c.AccessKey != "aws-ak" || c.SecretKey != "aws-sk" || c.SessionToken != "tok" {
		t.Fatalf("AWS env: %+v", c)
	}
	t.Setenv("SHOAL_S3_ACCESS_KEY", "shoal-ak")
	t.Setenv("SHOAL_S3_SECRET_KEY", "shoal-sk")
	c, _ = ParseURL("http://h/b")
	if c.AccessKey != "shoal-ak" || c.SecretKey != "shoal-sk" || c.SessionToken != "" {
		t.Fatalf("SHOAL env: %+v", c)
	}
	if strings.Contains(c.String(), "shoal-sk") {
		t.Fatalf("String shows the secret: %s", c)
	}
}

// TestCredentialsFile: with no keys in the environment, the store signs
// with the shared credentials file of the AWS chain.
func TestCredentialsFile(t *testing.T) {
	t.Setenv("SHOAL_S3_ACCESS_KEY", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	file := filepath.Join(t.TempDir(), "credentials")
	ini := "[default]\naws_access_key_id = file-ak\naws_secret_access_key = file-sk\n"
	if err := os.WriteFile(file, []byte(ini), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", file)
	t.Setenv("AWS_PROFILE", "")
	c, err := ParseURL("http://h/b")
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.credentials().GetWithContext(nil)
	if err != nil || v.AccessKeyID != "file-ak" || v.SecretAccessKey != "file-sk" {
		t.Fatalf("credentials = %+v, %v; want those of %s", v, err, file)
	}
}
