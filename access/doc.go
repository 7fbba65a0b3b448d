// Package access is the one access rule of mcpfsm's HTTP surfaces: the
// MCP endpoint of `mcpfsm serve -listen` and the operator console
// (`-http`, package console).
//
// A [Rule] made by [New] decides, for every request, in this order:
//
//  1. Host: a loopback name (127.0.0.0/8, ::1, localhost) is accepted on a
//     loopback connection; otherwise the Host must be the connection's own
//     local address or a name listed in Config.AllowHosts (flag
//     -allow-host). This defeats DNS rebinding: a web page cannot point its
//     own name at the server and read it.
//  2. Origin: a request carrying an Origin whose scheme://host is neither
//     the request's own nor listed in Config.AllowOrigins (flag
//     -allow-origin) is refused, whatever its method; so is a state-changing
//     request that the browser marks cross-site (Sec-Fetch-Site).
//  3. Authentication: with a static token, "Authorization: Bearer TOKEN"
//     (or the console's cookie); with OAuth, a JWT access token from the
//     configured issuer (the MCP authorization spec's resource server role).
//     Without either, no credential is asked for, and [Rule.Listen] serves
//     loopback addresses only.
//
// The subject of an accepted request is in its context ([Subject]), in a
// namespace of its kind (token, oauth:sub:, oauth:client:). The Protected
// Resource Metadata document (RFC 9728) is answered before
// authentication, at /.well-known/oauth-protected-resource; a preflight
// from an -allow-origin origin is answered there too (CORS).
//
// [Rule.Listen] opens a TCP or unix:PATH listener under the rule's
// connection caps, and [NewServer] makes the http.Server with the
// timeouts and limits these surfaces need, answering a connection past
// the caps with 503 at once. [TLSConfig] loads -tls-cert and -tls-key,
// [LoadToken] reads -token-file or $MCPFSM_TOKEN, [RunToken] and
// [WriteTokenFile] keep the token of a host given none. No token ever
// appears in an error, a log record or a response of this package.
package access
