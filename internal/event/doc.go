// Package event defines the events that make up a session's append-only log
// and the in-process bus that publishes them once they are durable.
//
// Every thing an agent does is an Event appended to its session's log, in
// order, before anyone outside sees it: the runtime commits the events of a
// turn to the store and only then publishes them on the Bus. The model's
// context, the CLI's log view, the gateway's long polls and its WebSocket
// stream are all views of this log.
//
// Live events are published on the Bus alone, never stored, with Seq 0:
// they show a turn as it happens (streamed text, a tool running, a
// session's state) and the stored events that follow say what came of it,
// so a reader that missed them loses nothing it cannot read again from the
// log. Kind.Live tells the two apart.
//
// # Kinds
//
// Every kind: whether the log stores it or only the bus carries it (live);
// which package writes it; and its data. An inbox kind is never an event:
// it is the kind of an inbox item, which its turn logs as other events. A
// test holds this list to the Kind constants and to Kind.Live.
//
//	kind                log     written by                                     data
//	input               stored  engine: the first event of a turn              InputData
//	system_message      stored  engine; runtime: a silent one, with no turn    InputData
//	thought             stored  engine: a model step's reasoning               TextData
//	text                stored  engine: a model step's text                    TextData
//	tool_call           stored  engine: before the tool runs                   ToolCallData
//	tool_result         stored  engine                                         ToolResultData
//	model_call          stored  engine: one attempt at a model                 ModelCallData
//	reset               stored  runtime: the context starts over after it      MarkerData
//	marker              stored  runtime: closed, reopened; engine: resumed, protocol  MarkerData
//	error               stored  engine: an error inside a turn                 ErrorData
//	turn_end            stored  engine; runtime: a turn ended without it       TurnEndData
//	approval_requested  stored  engine: a tool call waits for a person         ApprovalRequestData
//	approval_resolved   stored  engine: the person answered, or nobody did     ApprovalResolvedData
//	lifecycle           stored  engine; app: the agents' bootstrap calls       LifecycleData
//	working_memory      stored  store: with the working memory it changes      WorkingMemoryData
//	summary             stored  engine: compaction folds what it stands for    SummaryData
//	context_warning     stored  engine: the context passed a threshold         ContextData
//	control             stored  app: a control changed value                   ControlData
//	agent               stored  app: an agent started, created, stopped, refused by a guard AgentData
//	delivery            stored  connector: a reply finally not delivered, or in doubt     DeliveryData
//	text_delta          live    engine: a piece of streamed text               DeltaData
//	turn_start          live    runtime: a turn began                          -
//	tool_start          live    engine: a tool call began                      ToolCallData
//	tool_end            live    engine: a tool call ended                      ToolResultData
//	session_state       live    runtime: a session's state changed             StateData
//	extension           live    app: an extension's activation changed         ExtensionData
//	compact             inbox   runtime: a compaction asked for                -
//
// The runtime publishes on the bus every stored event it commits, whoever
// wrote it, once the store has it; the engine publishes the live events of
// its turns on the bus it is given, and the runtime its own. The store
// commits working_memory events itself, with the change they record, and
// returns them; the app's wiring publishes them once they are durable.
//
// Two things are called an approval. approval_requested and
// approval_resolved are about a person's permission for a call an agent's
// policy marks "ask" (package permit; the API's /v1/approvals). The
// lifecycle's "approval" phase and field are the agent's signed approval
// that travels with a call to a tool server, which verifies it (package
// approval). In Go, the first is a permit and the second an approval.
package event
