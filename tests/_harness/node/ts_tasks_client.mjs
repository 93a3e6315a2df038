// The official TypeScript SDK client calling a tool as a task through the gateway (2025-11-25
// tasks: client.experimental.tasks.callToolStream), then reading the task again by its id.
//
// Usage: node ts_tasks_client.mjs http URL TOKEN TOOL ARGS_JSON
//        node ts_tasks_client.mjs stdio PYTHON CONFIG TOOL ARGS_JSON
// Prints a JSON line as soon as the task is created ({"created": task}: a held call's names its
// approval, which the test then decides), then one last line:
// {"messages": [types...], "taskId", "status", "text", "isError"}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [face, where, secret, tool, argsJson] = process.argv.slice(2);
const transport =
  face === "http"
    ? new StreamableHTTPClientTransport(new URL(where), {
        requestInit: { headers: { Authorization: `Bearer ${secret}` } },
      })
    : new StdioClientTransport({ command: where, args: ["-m", "gateway.cli", "stdio", "--config", secret] });
const client = new Client({ name: "ts-tasks-client", version: "1.0.0" });
await client.connect(transport);
await client.listTools();
const messages = [];
let taskId = null;
let text = null;
let isError = null;
const stream = client.experimental.tasks.callToolStream(
  { name: tool, arguments: JSON.parse(argsJson) },
  CallToolResultSchema,
  { task: { ttl: 60000 } },
);
for await (const message of stream) {
  messages.push(message.type);
  if (message.type === "taskCreated") {
    taskId = message.task.taskId;
    console.log(JSON.stringify({ created: message.task }));
  }
  if (message.type === "result") {
    text = message.result.content[0].text;
    isError = message.result.isError ?? false;
  }
  if (message.type === "error") text = String(message.error);
}
const task = await client.experimental.tasks.getTask(taskId);
console.log(JSON.stringify({ messages, taskId, status: task.status, text, isError }));
await client.close();
