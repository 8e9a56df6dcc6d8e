import { HOST_EXECUTORS } from "../../../ground/config/chat-schema.ts";
import { CHAT_PLATFORMS } from "../../chat/platforms.ts";
import type { Executor } from "../../executor.ts";
import { access } from "./access.ts";
import { email } from "./email.ts";
import { identity } from "./identity.ts";
import { mcpCall } from "./mcp.ts";
import { messageUser } from "./message-user.ts";
import { purpose } from "./purpose.ts";
import { repoPush } from "./repo.ts";
import { selfEdit } from "./self-edit.ts";
import { fileTask, setTasks } from "./tasks.ts";

/**
 * Every executor by the name `[[action]] executor = "…"` uses, and `mcp`,
 * which no [[action]] may name: only the gateway files its gates (a tools/call
 * a `verdict = "gate"` grant held). Each chat platform's sender goes by the
 * platform's name, looked up in the list (services/chat/platforms.ts) when
 * it is asked for.
 */
const HOST_TABLE = complete({
  "message-user": messageUser,
  email,
  self: selfEdit,
  identity,
  purpose,
  task: fileTask,
  "task-list": setTasks,
  repo: repoPush,
  access,
  mcp: mcpCall,
});

/** The executor config names `name`, the host's own or a chat platform's sender. */
export function executorNamed(name: string): Executor<unknown> | undefined {
  if (Object.hasOwn(HOST_TABLE, name)) return HOST_TABLE[name];
  return CHAT_PLATFORMS.find((platform) => platform.name === name)?.sender;
}

/** Every name config may give a host executor has one: a missing one fails at load, not at a send. */
function complete(
  table: Record<string, Executor<unknown>>,
): Readonly<Record<string, Executor<unknown>>> {
  const missing = [...HOST_EXECUTORS, "mcp"].filter((name) => !Object.hasOwn(table, name));
  if (missing.length > 0) throw new Error(`no executor for ${missing.join(", ")}`);
  return table;
}
