"""Reading a chat template: what it writes for each field of an assistant message.

The chat template renders the reasoning, tool calls and content of assistant messages in history.
Probe conversations carry a unique sentinel in each field (`probes`); the turns they render show
where each field went (`locate`), the delimiters around it (`delimiters`, `calls`, `leftovers`,
`build`: a response template that reads it back), what the tool instructions tell the model to
write (`told`), and which format of the library the calls are written in (`library`, `match`);
`outcomes` says which probes the response template read parses back.

Both the draft (engine.draft: this reading, verified by the checks and reported) and the check
`chat_lint.history_calls` (the history writes calls unlike what the instructions tell the model)
read the template this way, so it sits below both: nothing here imports the checks or the draft."""
