package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// redirectURL is the loopback redirect the host registers. Nothing listens
// there: the fetcher reads the code from the authorization server's
// redirect instead of following it, as a browser would hand it to a
// loopback listener.
const redirectURL = "http://127.0.0.1:3000/callback"

// clientMetadataURL is the client ID metadata document the suite serves
// for hosts that register by URL.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// oauthHandler picks the go-sdk handler for an auth scenario.
func oauthHandler(scenario string, params map[string]any) (auth.OAuthHandler, error) {
	id, _ := params["client_id"].(string)
	secret, _ := params["client_secret"].(string)
	if pemKey, _ := params["private_key_pem"].(string); pemKey != "" {
		alg, _ := params["signing_algorithm"].(string)
		return newJWTClientCredentials(id, pemKey, alg)
	}
	if strings.HasPrefix(scenario, "auth/client-credentials") {
		if id == "" || secret == "" {
			return nil, fmt.Errorf("scenario %s: the context has no client_id and client_secret; and no private_key_pem", scenario)
		}
		return extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: id, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}},
		})
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:                    redirectURL,
		AuthorizationCodeFetcher:       followAuthorization,
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: clientMetadataURL},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{RedirectURIs: []string{redirectURL}},
		},
	}
	if id != "" && secret != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: id, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}}
	}
	return auth.NewAuthorizationCodeHandler(cfg)
}

// followAuthorization plays the user's browser: it opens the
// authorization URL and takes the code, state and issuer from the redirect
// to the loopback address, which a test authorization server sends at once.
func followAuthorization(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode < 300 || resp.StatusCode > 399 {
		return nil, fmt.Errorf("authorization endpoint answered %s without a usable redirect", resp.Status)
	}
	q := loc.Query()
	if e := q.Get("error"); e != "" {
		return nil, fmt.Errorf("authorization refused: %s: %s", e, q.Get("error_description"))
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}
