package rediskv

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"shoal/internal/tlsconf"
)

// DefaultNamespace names the keys of a store whose URL sets no ns.
const DefaultNamespace = "shoal"

// config is a parsed META-URL.
type config struct {
	opts    redis.UniversalOptions
	ns      string        // key namespace: every key starts with "{ns}:"
	retry   time.Duration // 0: the Options or default bound
	cluster bool
	noCache bool   // cache=off: no client-side cache (track.go)
	display string // the URL without password or query, for Name
	tls     tlsconf.Files
}

// Query parameters a META-URL may carry.
const (
	paramNamespace    = "ns"
	paramRetry        = "retry_timeout"
	paramCluster      = "cluster"
	paramCache        = "cache"
	paramSentinelPass = "sentinel_password"
	paramCA           = "ca"
	paramCert         = "cert"
	paramKey          = "key"
)

// parseURL parses the forms listed in the package doc. It is written by
// hand because net/url rejects the comma-separated host lists of Sentinel
// and Cluster URLs.
func parseURL(raw string) (*config, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, fmt.Errorf("rediskv: malformed META-URL: want redis://[:PASSWORD@]HOST:PORT[/DB]")
	}
	base, tlsOn, sentinel, cluster, err := splitScheme(strings.ToLower(scheme))
	if err != nil {
		return nil, err
	}
	authority, pathQuery := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, pathQuery = rest[:i], rest[i:]
	}
	path, rawQuery, _ := strings.Cut(pathQuery, "?")
	c := &config{ns: DefaultNamespace, cluster: cluster}
	if err := c.setUser(authority); err != nil {
		return nil, err
	}
	hosts := authority[strings.LastIndex(authority, "@")+1:]
	if err := c.setQuery(rawQuery); err != nil {
		return nil, err
	}
	if err := c.setAddrs(hosts, sentinel); err != nil {
		return nil, err
	}
	if err := c.setPath(path, sentinel); err != nil {
		return nil, err
	}
	if err := c.setTLS(tlsOn); err != nil {
		return nil, err
	}
	c.display = base + "://" + userPrefix(c.opts.Username) + strings.Join(c.opts.Addrs, ",") + path
	return c, nil
}

// splitScheme decodes redis, rediss, redis+sentinel, rediss+sentinel,
// redis+cluster and rediss+cluster.
func splitScheme(scheme string) (base string, tlsOn, sentinel, cluster bool, err error) {
	base, mode, _ := strings.Cut(scheme, "+")
	if base != "redis" && base != "rediss" {
		return "", false, false, false, fmt.Errorf("rediskv: unknown META-URL scheme %q: use redis://, rediss://, redis+sentinel:// or redis+cluster://", scheme)
	}
	switch mode {
	case "", "sentinel", "cluster":
	default:
		return "", false, false, false, fmt.Errorf("rediskv: unknown META-URL scheme %q: use redis+sentinel:// or redis+cluster://", scheme)
	}
	return scheme, base == "rediss", mode == "sentinel", mode == "cluster", nil
}

func userPrefix(user string) string {
	if user == "" {
		return ""
	}
	return user + "@"
}

// setUser takes [user][:password]@ from the authority.
func (c *config) setUser(authority string) error {
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return nil
	}
	user, pass, _ := strings.Cut(authority[:at], ":")
	var err1, err2 error
	c.opts.Username, err1 = url.PathUnescape(user)
	c.opts.Password, err2 = url.PathUnescape(pass)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("rediskv: malformed user or password in META-URL")
	}
	return nil
}

// setAddrs takes the comma-separated host[:port] list.
func (c *config) setAddrs(hosts string, sentinel bool) error {
	defPort := "6379"
	if sentinel {
		defPort = "26379"
	}
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return fmt.Errorf("rediskv: META-URL has an empty host")
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = strings.Trim(h, "[]"), defPort
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return fmt.Errorf("rediskv: META-URL host %q: bad port", h)
		}
		c.opts.Addrs = append(c.opts.Addrs, net.JoinHostPort(host, port))
	}
	if len(c.opts.Addrs) > 1 && !sentinel && !c.cluster {
		return fmt.Errorf("rediskv: META-URL lists several hosts: add ?cluster=true (Redis Cluster) or use redis+sentinel://")
	}
	return nil
}

// setPath takes /db, or /mastername[/db] for Sentinel.
func (c *config) setPath(path string, sentinel bool) error {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if parts[0] == "" {
		parts = nil
	}
	if sentinel {
		if len(parts) == 0 {
			return fmt.Errorf("rediskv: Sentinel META-URL needs the master name: redis+sentinel://HOST:26379,HOST2:26379/MASTER[/DB]")
		}
		c.opts.MasterName, parts = parts[0], parts[1:]
	}
	if len(parts) > 1 {
		return fmt.Errorf("rediskv: META-URL path %q: want /DB", path)
	}
	if len(parts) == 1 {
		db, err := strconv.Atoi(parts[0])
		if err != nil || db < 0 {
			return fmt.Errorf("rediskv: META-URL database %q is not a number", parts[0])
		}
		c.opts.DB = db
	}
	if c.cluster && c.opts.DB != 0 {
		return fmt.Errorf("rediskv: Redis Cluster has only database 0")
	}
	return nil
}

// setTLS builds the TLS settings of a rediss URL from ca, cert and key.
func (c *config) setTLS(tlsOn bool) error {
	if !tlsOn {
		if !c.tls.Empty() {
			return fmt.Errorf("rediskv: META-URL parameters ca, cert and key need TLS: use rediss://")
		}
		return nil
	}
	host, _, _ := net.SplitHostPort(c.opts.Addrs[0])
	cfg, err := c.tls.Config(host)
	if err != nil {
		return fmt.Errorf("rediskv: META-URL: %w", err)
	}
	c.opts.TLSConfig = cfg
	return nil
}

// setQuery takes ns, retry_timeout, cluster, cache, sentinel_password,
// ca, cert and key.
func (c *config) setQuery(rawQuery string) error {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return fmt.Errorf("rediskv: malformed META-URL query: %w", err)
	}
	for name, vals := range q {
		v := vals[len(vals)-1]
		switch name {
		case paramNamespace:
			if v == "" || strings.ContainsAny(v, "{}") {
				return fmt.Errorf("rediskv: META-URL ns=%q: want a non-empty name without braces", v)
			}
			c.ns = v
		case paramRetry:
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("rediskv: META-URL %s=%q: want a positive duration such as 30s", paramRetry, v)
			}
			c.retry = d
		case paramCluster:
			on, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("rediskv: META-URL cluster=%q: want true or false", v)
			}
			c.cluster = c.cluster || on
		case paramCache:
			switch v {
			case "on":
			case "off":
				c.noCache = true
			default:
				return fmt.Errorf("rediskv: META-URL cache=%q: want on or off", v)
			}
		case paramSentinelPass:
			c.opts.SentinelPassword = v
		case paramCA:
			c.tls.CA = v
		case paramCert:
			c.tls.Cert = v
		case paramKey:
			c.tls.Key = v
		default:
			return fmt.Errorf("rediskv: unknown META-URL parameter %q (known: ns, retry_timeout, cluster, cache, sentinel_password, ca, cert, key)", name)
		}
	}
	return nil
}
