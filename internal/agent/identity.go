package agent

import "net/url"

// WithoutSecrets returns m as an agent may show it to others (its
// character file at an identity server): the base URL without
// credentials or query, no extra provider parameters (they may hold
// keys), the same for its fallbacks. The API key was never in it: a model
// names only the variable that holds it (APIKeyEnv), which is dropped too.
func (m Model) WithoutSecrets() Model {
	m.BaseURL = bareURL(m.BaseURL)
	m.Params.Extra = nil
	m.APIKeyEnv = ""
	if m.Fallbacks != nil {
		fs := make([]Model, len(m.Fallbacks))
		for i, f := range m.Fallbacks {
			fs[i] = f.WithoutSecrets()
		}
		m.Fallbacks = fs
	}
	return m
}

// bareURL is raw without user information, query and fragment; "" if it
// is not a URL.
func bareURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return u.String()
}
