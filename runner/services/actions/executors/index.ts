import { EXECUTORS, type ExecutorName } from "../../../ground/config/action-schema.ts";
import { CHAT_PLATFORMS } from "../../chat/platforms.ts";
import type { Executor } from "../../executor.ts";
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
 * platform's name (services/chat/platforms.ts).
 */
export const EXECUTOR_TABLE = complete({
  "message-user": messageUser,
  email,
  self: selfEdit,
  identity,
  purpose,
  task: fileTask,
  "task-list": setTasks,
  repo: repoPush,
  mcp: mcpCall,
  ...Object.fromEntries(CHAT_PLATFORMS.map((platform) => [platform.name, platform.sender])),
});

/** Every name config may give an executor has one: a platform missing from the list fails at load, not at a send. */
function complete(
  table: Record<string, Executor<unknown>>,
): Readonly<Record<ExecutorName | "mcp", Executor<unknown>>> {
  const missing = [...EXECUTORS, "mcp"].filter((name) => !Object.hasOwn(table, name));
  if (missing.length > 0) throw new Error(`no executor for ${missing.join(", ")}`);
  return table as Record<ExecutorName | "mcp", Executor<unknown>>;
}
