package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"agentd/internal/gateway/console"
)

// The console is served where the gateway mounts it: the page at / and its
// files under /console/.
func ExampleHandler() {
	h := console.Handler(nil)
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", h)
	mux.Handle("GET /console/", h)

	for _, p := range []string{"/", "/console/app.js", "/console/missing.js"} {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", p, nil))
		fmt.Println(p, w.Code, w.Header().Get("Content-Type"))
	}
	// Output:
	// / 200 text/html; charset=utf-8
	// /console/app.js 200 text/javascript; charset=utf-8
	// /console/missing.js 404 text/plain; charset=utf-8
}
