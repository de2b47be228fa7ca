package webext_test

import (
	"context"
	"encoding/json"
	"fmt"

	"agentd/internal/store"
	"agentd/internal/webext"
)

func ExampleCheckCSSValue() {
	for _, v := range []string{"#4f46e5", "0 1px 2px rgb(0 0 0 / 0.05)", "url(https://example.com/x.png)", "red; background: blue"} {
		if msg := webext.CheckCSSValue(v); msg != "" {
			fmt.Printf("%s: refused (%s)\n", v, msg)
		} else {
			fmt.Printf("%s: fine\n", v)
		}
	}
	// Output:
	// #4f46e5: fine
	// 0 1px 2px rgb(0 0 0 / 0.05): fine
	// url(https://example.com/x.png): refused (a value may hold letters, digits, spaces and # % . , ( ) / ' " _ + - only)
	// red; background: blue: refused (a value may hold letters, digits, spaces and # % . , ( ) / ' " _ + - only)
}

// The extension manager activates an enabled app row (Apps is the app
// type's handler); the gateway serves its files under /apps/<name>/.
func ExampleApps_File() {
	apps := webext.NewApps()
	spec, _ := json.Marshal(webext.App{Title: "Hello", Files: map[string]string{
		"index.html": "<!doctype html><script type=module src=app.js></script>",
		"app.js":     "document.body.textContent = 'hello'",
	}})
	err := apps.Activate(context.Background(), &store.Extension{Type: "app", Name: "hello", Spec: spec, Enabled: true,
		Version: 1, Provenance: store.ProvenanceUser})
	fmt.Println(err)
	f, _ := apps.File("hello", "") // /apps/hello/
	fmt.Println(f.ContentType)
	_, err = apps.File("hello", "../secret.txt")
	fmt.Println(err)
	// Output:
	// <nil>
	// text/html; charset=utf-8
	// app hello: ../secret.txt: not found
}
