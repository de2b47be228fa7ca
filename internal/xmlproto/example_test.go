package xmlproto_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"agentd/internal/xmlproto"
)

func ExampleParser() {
	p := xmlproto.NewParser(nil)
	stream := []string{
		"<think>The user wants the we", "ather &amp; a ticket.</think>\n<action_",
		`call name="weather">{"city": "Oslo"}</action_call>`,
		"\n<output>Filed it.</output>",
	}
	var items []xmlproto.Item
	for _, chunk := range stream {
		items = append(items, p.Write(chunk)...)
	}
	items = append(items, p.Close()...)
	for _, it := range items {
		switch it.Kind {
		case xmlproto.ThoughtDelta:
			fmt.Printf("thinking… %q\n", it.Text)
		case xmlproto.Thought:
			fmt.Printf("thought: %s\n", it.Text)
		case xmlproto.Call:
			fmt.Printf("call %s %s\n", it.Name, it.Args)
		case xmlproto.OutputDelta:
			fmt.Printf("replying… %q\n", it.Text)
		case xmlproto.Output:
			fmt.Printf("output (%s): %s\n", it.Type, it.Text)
		}
	}
	// Output:
	// thinking… "The user wants the we"
	// thinking… "ather & a ticket."
	// thought: The user wants the weather & a ticket.
	// call weather {"city":"Oslo"}
	// replying… "Filed it."
	// output (text): Filed it.
}

func ExamplePrompt_Render() {
	p := &xmlproto.Prompt{
		Instructions: "You answer questions about the weather.",
		Sections:     []xmlproto.Section{{Tag: "working_memory", Body: "city: Oslo"}},
		Actions: []xmlproto.Action{{
			Name:        "weather",
			Description: "Today's weather in a city.",
			Schema:      json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string"}}}`),
		}},
	}
	s := p.Render()
	// After the protocol's rules:
	fmt.Print(s[strings.Index(s, "<instructions>"):])
	// Output:
	// <instructions>
	// You answer questions about the weather.
	// </instructions>
	// <working_memory>
	// city: Oslo
	// </working_memory>
	// <actions>
	// <action name="weather"><description>Today's weather in a city.</description><schema>{"type":"object","properties":{"city":{"type":"string"}}}</schema></action>
	// </actions>
	// <outputs>
	// <output_type name="text"><description>The reply to the user, as text.</description></output_type>
	// </outputs>
}

func ExampleResultsText() {
	fmt.Println(xmlproto.ResultsText([]xmlproto.Result{
		{Call: "call_1", Name: "weather", Output: `{"temp": -3}`},
		{Call: "call_2", Name: "fetch", Output: "refused: <output> is not a URL", IsError: true},
	}))
	// Output:
	// <action_results>
	// <action_result call="call_1" name="weather">{"temp": -3}</action_result>
	// <action_result call="call_2" name="fetch" error="true">refused: &lt;output> is not a URL</action_result>
	// </action_results>
}
