// Package httpheader is the HTTP round-tripper that adds an MCP server's
// configured headers (a static "Authorization: Bearer ...", an API key)
// to its requests, and only to those that go to the origin of the
// configured endpoint.
//
// An http.Client keeps the headers of a request when it follows a
// redirect, Authorization included when the new host is the same host on
// another port or a subdomain; and a round-tripper that adds headers to
// every request would add them to the redirected one whatever its host.
// Transport does neither: a request to any other origin (another scheme,
// an https endpoint redirected to http among them, host or port) leaves
// without the configured headers and without Authorization, which is
// where the SDK puts an OAuth token.
package httpheader

import (
	"net/http"
	"net/url"
	"strings"
)

// Transport is an http.RoundTripper that adds Header to the requests to
// the origin of the endpoint given to [New] and strips those headers and
// Authorization from requests to any other origin.
type Transport struct {
	base   http.RoundTripper
	header http.Header // canonical names
	origin string      // scheme://host:port, empty when the endpoint does not parse
}

// New returns a Transport for endpoint (the configured URL whose origin
// may receive header) that sends through base (nil means
// http.DefaultTransport). Header names are canonicalized; a header the
// request already has (one the SDK set) is kept as it is. An endpoint that
// is not an absolute http(s) URL has no origin, and no request gets the
// headers.
func New(endpoint string, header http.Header, base http.RoundTripper) *Transport {
	if base == nil {
		base = http.DefaultTransport
	}
	h := make(http.Header, len(header))
	for k, vs := range header {
		h[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	t := &Transport{base: base, header: h}
	if u, err := url.Parse(endpoint); err == nil {
		t.origin = Origin(u)
	}
	return t
}

// Origin returns the origin of u: its scheme, host and port in lower case,
// the port explicit ("https://host:443"); empty unless u is an absolute
// http or https URL.
func Origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if host == "" || (scheme != "http" && scheme != "https") {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6
	}
	return scheme + "://" + host + ":" + port
}

// RoundTrip sends req with the configured headers if it goes to the
// endpoint's origin, and without them and Authorization otherwise. It
// never changes req itself.
//
// A header the request already has is kept, except the Authorization
// that http.Client makes from a URL's user info (user:password@host),
// which a configured Authorization replaces: the header the config
// names is the credential meant for the endpoint.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.origin != "" && Origin(req.URL) == t.origin {
		if len(t.header) > 0 {
			req = req.Clone(req.Context())
			fromUserInfo := req.URL.User != nil && req.Header.Get("Authorization") == basicAuthOf(req.URL.User)
			for k, vs := range t.header {
				if _, set := req.Header[k]; !set || (k == "Authorization" && fromUserInfo) {
					req.Header[k] = append([]string(nil), vs...)
				}
			}
		}
		return t.base.RoundTrip(req)
	}
	for k := range req.Header {
		if t.private(k) {
			req = req.Clone(req.Context())
			for k := range req.Header {
				if t.private(k) {
					delete(req.Header, k)
				}
			}
			break
		}
	}
	return t.base.RoundTrip(req)
}

// basicAuthOf is the Authorization header http.Client sets for a URL's
// user info.
func basicAuthOf(u *url.Userinfo) string {
	pw, _ := u.Password()
	r := &http.Request{Header: http.Header{}}
	r.SetBasicAuth(u.Username(), pw)
	return r.Header.Get("Authorization")
}

// private reports whether the header named k must not leave the origin;
// k need not be canonical.
func (t *Transport) private(k string) bool {
	k = http.CanonicalHeaderKey(k)
	_, configured := t.header[k]
	return configured || k == "Authorization"
}
