// Render chat templates with @huggingface/jinja, as transformers.js and the Hub's pages do:
// `new Template(source).render({messages, tools, documents, add_generation_prompt, ...tokens, ...kwargs})`.
// Reads {"module": path of the package's dist/index.js, "max_chars": N, "jobs": [{"source", "context"}]}
// on stdin; writes one JSON array: [{"text": ...} | {"error": ...}] in job order.
// Python bounds the whole process in time and memory (it is killed when it overruns).
import { pathToFileURL } from "node:url";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const request = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const { Template } = await import(pathToFileURL(request.module).href);

const compiled = new Map();
const results = request.jobs.map(({ source, context }) => {
  try {
    if (!compiled.has(source)) {
      try {
        compiled.set(source, new Template(source));
      } catch (error) {
        compiled.set(source, error);
      }
    }
    const template = compiled.get(source);
    if (template instanceof Error) throw template;
    const text = template.render(context);
    if (text.length > request.max_chars) return { error: `the output is over ${request.max_chars} characters (stopped)` };
    return { text };
  } catch (error) {
    return { error: String(error && error.message ? error.message : error) };
  }
});
process.stdout.write(JSON.stringify(results));
