package cli

import (
	"context"
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"agentd/internal/app"
	"agentd/internal/bench"
)

func (e *env) benchCmd() *cobra.Command {
	var asJSON bool
	var o bench.Options
	var soak bench.SoakOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure agentd end to end against the fake model and print a table",
		Long: "Run agentd against fakellm over loopback with instant replies and report what a client sees\n" +
			"through the API of agentd serve (turn latency and overhead, turns a second, CPU per turn,\n" +
			"memory, a one-shot agentd send, WebSocket fan-out), each beside its floor (a bare Go\n" +
			"program doing the least that figure's work needs, measured in the same run) and its ratio\n" +
			"to it, then the breakdown in process, and extensions: agentd serve's start over 10,000 extension\n" +
			"rows, an action tool call against its bare HTTP round trip. --quick runs smaller counts (for CI); the figures in\n" +
			"docs/performance.md come from a full run. --soak DURATION instead runs agentd serve under\n" +
			"--rate turns a second and prints its RSS, Go heap and SQLite's memory as it goes.\n" +
			"With --store postgres://… it measures agentd on that PostgreSQL database instead (writing\n" +
			"agentd's tables there): durable turns a second with 1, 2 and 3 nodes, turn overhead against\n" +
			"SQLite in the same run, cross-node event delivery, and an extension row's change on one node\n" +
			"until another has it active.",
		Example: "  agentd bench\n" +
			"  agentd bench --quick --json\n" +
			"  agentd bench --soak 1h --rate 200\n" +
			"  agentd bench --store postgres://agentd@127.0.0.1/agentd_bench",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if soak.Duration > 0 {
				soak.JSON, soak.Synchronous = asJSON, o.Synchronous
				return bench.Soak(cmd.Context(), &soak, e.stdout)
			}
			if u := e.storeFlag; u != "" && u != app.StoreSQLite {
				res, err := bench.Cluster(cmd.Context(), &bench.ClusterOptions{Store: u, Quick: o.Quick})
				return e.printBench(res, err, asJSON)
			}
			o.Version = Version
			res, err := bench.Run(cmd.Context(), &o)
			return e.printBench(res, err, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (with --soak: a JSON line a sample)")
	cmd.Flags().BoolVar(&o.Quick, "quick", false, "smaller counts, for CI")
	cmd.Flags().BoolVar(&o.InProcessOnly, "in-process-only", false, "skip the figures that start agentd serve as a child process")
	cmd.Flags().StringVar(&o.Synchronous, "synchronous", "full", "the store's synchronous mode: full (the default, durable on power loss) or normal, to see what durability costs")
	cmd.Flags().DurationVar(&soak.Duration, "soak", 0, "run a steady load for this long instead, printing the daemon's memory as it goes")
	cmd.Flags().Float64Var(&soak.Rate, "rate", 10, "turns a second of --soak")
	cmd.Flags().DurationVar(&soak.Every, "every", 0, "how often --soak reads memory (default: the duration ÷ 20, between 1s and 1m)")
	cmd.Flags().DurationVar(&soak.Warmup, "warmup", 0, "the part of --soak after which memory should stay flat (default 5m, at most a fifth of the run)")
	cmd.AddCommand(e.benchJobsCmd(), e.benchAgentsCmd(), e.benchConnectorsCmd(), e.benchToolsCmd(), e.benchXMLCmd(), e.benchHelper("floor-server", bench.ServeFloor), e.benchHelper("fanout-clients", bench.FanoutClients))
	return cmd
}

// benchJobsCmd is `agentd bench jobs`: agentd serve holding many jobs.
func (e *env) benchJobsCmd() *cobra.Command {
	var asJSON bool
	var o bench.JobsOptions
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "Measure the job scheduler of agentd serve holding 10,000 jobs",
		Long: "Put --jobs job rows (cron and every triggers spread over the day, two webhooks) into agentd serve\n" +
			"through its API and measure: its memory and CPU at idle with them and with none, how late --fires\n" +
			"jobs due at one minute are taken up (their scheduled time to their run's input event) and as\n" +
			"many others due once each over 20 s (every triggers, at whole seconds spread evenly), and\n" +
			"a signed POST /hooks/{name} to its 202 over TCP and over the socket (--hooks each).",
		Example: "  agentd bench jobs\n" +
			"  agentd bench jobs --quick --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Version = Version
			res, err := bench.Jobs(cmd.Context(), &o)
			return e.printBench(res, err, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&o.Quick, "quick", false, "smaller counts, for CI")
	cmd.Flags().IntVar(&o.Jobs, "jobs", 0, "job rows (default 10000; --quick 1000)")
	cmd.Flags().IntVar(&o.Fires, "fires", 0, "jobs that fire at one minute, and as many that fire spread over 20 s (default 500; --quick 100)")
	cmd.Flags().IntVar(&o.Hooks, "hooks", 0, "webhook requests over TCP and over the socket each (default 1000; --quick 200)")
	cmd.Flags().DurationVar(&o.Idle, "idle", 0, "how long idle CPU is measured (default 30s; --quick 5s)")
	cmd.Flags().StringVar(&o.Synchronous, "synchronous", "full", "the store's synchronous mode: full or normal")
	return cmd
}

// benchXMLCmd is `agentd bench xml`: a turn's overhead in the XML tool
// protocol.
func (e *env) benchXMLCmd() *cobra.Command {
	var asJSON bool
	var o bench.XMLOptions
	cmd := &cobra.Command{
		Use:   "xml",
		Short: "Measure a three-step turn in the XML tool protocol against the same with native tool calls",
		Long: "Run agentd serve on fakellm with two agents, one with tool_protocol native and one with xml, and time\n" +
			"--turns turns of each through its socket, in turn: three model steps, two calling the clock tool,\n" +
			"then the answer. Reports p50 and p99 of each and the XML turn's overhead (target: 1 ms at p50).",
		Example: "  agentd bench xml\n" +
			"  agentd bench xml --quick --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Version = Version
			res, err := bench.XML(cmd.Context(), &o)
			return e.printBench(res, err, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&o.Quick, "quick", false, "smaller counts, for CI")
	cmd.Flags().IntVar(&o.Turns, "turns", 0, "turns of each protocol timed (default 1000; --quick 100)")
	cmd.Flags().StringVar(&o.Synchronous, "synchronous", "full", "the store's synchronous mode: full or normal")
	return cmd
}

// benchConnectorsCmd is `agentd bench connectors`: a Telegram connector
// of agentd serve against a fake Bot API.
func (e *env) benchConnectorsCmd() *cobra.Command {
	var asJSON bool
	var o bench.ConnectorsOptions
	cmd := &cobra.Command{
		Use:   "connectors",
		Short: "Measure a Telegram connector of agentd serve against a fake Bot API",
		Long: "Run agentd serve with a Telegram connector polling a fake Bot API in this process, its agent on the\n" +
			"fake model, and measure: messages a second from --users people sending --per-user messages each to\n" +
			"their replies delivered; the latency a Telegram message adds over the same turn posted to the API\n" +
			"(--latency turns each, interleaved; target 5 ms at p50); how often streamed replies are edited, the\n" +
			"most edits of one message in a second and the final text's delay after the turn's end, with and\n" +
			"without every fifth edit answered 429.",
		Example: "  agentd bench connectors\n" +
			"  agentd bench connectors --quick --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Version = Version
			res, err := bench.Connectors(cmd.Context(), &o)
			return e.printBench(res, err, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&o.Quick, "quick", false, "smaller counts, for CI")
	cmd.Flags().IntVar(&o.Users, "users", 0, "people sending at once (default 50; --quick 5)")
	cmd.Flags().IntVar(&o.PerUser, "per-user", 0, "messages each person sends (default 20; --quick 4)")
	cmd.Flags().IntVar(&o.Latency, "latency", 0, "turns timed through the API and through Telegram each (default 500; --quick 20)")
	cmd.Flags().IntVar(&o.Streams, "streams", 0, "streamed replies read for each edit figure (default 3; --quick 1)")
	cmd.Flags().IntVar(&o.StreamChars, "stream-chars", 0, "characters of each streamed reply, at 200 a second (default 2000; --quick 400)")
	cmd.Flags().StringVar(&o.Synchronous, "synchronous", "full", "the store's synchronous mode: full or normal")
	return cmd
}

// benchToolsCmd is `agentd bench tools`: the tools that act on a
// machine, called as a turn's tool calls run.
func (e *env) benchToolsCmd() *cobra.Command {
	var asJSON bool
	var o bench.ToolsOptions
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Measure exec with and without bubblewrap, grep over 100,000 files, read_file of a range of 10 MB",
		Long: "Call the tools that act on a machine through the tool registry, as a turn's tool calls run, and measure:\n" +
			"exec of true --execs times in each sandbox mode (none, bwrap) beside os/exec of it with no sandbox, the\n" +
			"sandbox's cost being bwrap − none at p50 and p99 (agentd itself is the sandbox's helper); grep over a\n" +
			"workspace of --files files beside GNU grep; read_file of 100 lines in the middle of a 10 MB file; then\n" +
			"agentd serve on the fake model: a turn whose step calls exec, beside the same agent's one-step turn.\n" +
			"The issue sets no target for these figures. What it writes goes into a temporary folder it removes.",
		Example: "  agentd bench tools\n" +
			"  agentd bench tools --quick --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Version = Version
			res, err := bench.Tools(cmd.Context(), &o)
			return e.printBench(res, err, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&o.Quick, "quick", false, "smaller counts, for CI")
	cmd.Flags().IntVar(&o.Execs, "execs", 0, "exec calls timed in each way (default 200; --quick 20)")
	cmd.Flags().IntVar(&o.Files, "files", 0, "files of the grep workspace (default 100000; --quick 10000)")
	cmd.Flags().IntVar(&o.Greps, "greps", 0, "greps timed (default 5; --quick 3)")
	cmd.Flags().IntVar(&o.Reads, "reads", 0, "read_file calls timed (default 200; --quick 20)")
	cmd.Flags().IntVar(&o.Turns, "turns", 0, "turns through agentd serve of each kind (default 200; --quick 20)")
	cmd.Flags().StringVar(&o.ServeSandbox, "serve-sandbox", "", "the sandbox of the turns through agentd serve: bwrap or none (default: bwrap where it runs, else none)")
	return cmd
}

// benchAgentsCmd is `agentd bench agents`: agentd serve's dynamic agents.
func (e *env) benchAgentsCmd() *cobra.Command {
	var asJSON bool
	var o bench.AgentsOptions
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "Measure agentd serve starting 1,000 background agents, a chain and a fan-out of agent messages",
		Long: "Against agentd serve over TCP with the fake model, measure: --background background agents started\n" +
			"with POST /v1/agents/{template}/start, 16 at once (until all are accepted, each request, until all are\n" +
			"done, the daemon's memory after them); a message passed along --chain permanent agents, each sending\n" +
			"it on with send_agent_message (each hop, from one turn's start to the next one's); one step's\n" +
			"send_agent_message to --fanout agents at once (until the last target has the message, and has answered).",
		Example: "  agentd bench agents\n" +
			"  agentd bench agents --quick --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Version = Version
			res, err := bench.Agents(cmd.Context(), &o)
			return e.printBench(res, err, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&o.Quick, "quick", false, "smaller counts, for CI")
	cmd.Flags().IntVar(&o.Background, "background", 0, "background agents started (default 1000; --quick 100)")
	cmd.Flags().IntVar(&o.Chain, "chain", 0, "permanent agents the chain's message passes through (default 100; --quick 10)")
	cmd.Flags().IntVar(&o.Fanout, "fanout", 0, "agents one step sends a message to (default 100; --quick 10)")
	cmd.Flags().StringVar(&o.Synchronous, "synchronous", "full", "the store's synchronous mode: full or normal")
	return cmd
}

// benchHelper is a process the bench starts of itself, to measure apart
// from it; it talks to the bench over its standard input and output.
func (e *env) benchHelper(name string, run func(ctx context.Context, in io.Reader, out io.Writer) error) *cobra.Command {
	return &cobra.Command{
		Use:    name,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), e.stdin, e.stdout)
		},
	}
}

// benchTable is a bench result: it prints as a table, or as JSON.
type benchTable interface{ WriteTable(io.Writer) error }

// printBench prints a bench's result, as JSON with asJSON, or its error.
func (e *env) printBench(res benchTable, err error, asJSON bool) error {
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(e.stdout).Encode(res)
	}
	return res.WriteTable(e.stdout)
}
