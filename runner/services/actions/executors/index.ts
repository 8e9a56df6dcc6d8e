import type { ExecutorName } from "../../../ground/config/action-schema.ts";
import { discord } from "./discord.ts";
import { email } from "./email.ts";
import type { Executor } from "./executor.ts";
import { identity } from "./identity.ts";
import { mcpCall } from "./mcp.ts";
import { messageUser } from "./message-user.ts";
import { purpose } from "./purpose.ts";
import { repoPush } from "./repo.ts";
import { selfEdit } from "./self-edit.ts";
import { slack } from "./slack.ts";
import { fileTask, setTasks } from "./tasks.ts";
import { term } from "./term.ts";

/**
 * Every executor by the name `[[action]] executor = "…"` uses, and `mcp`,
 * which no [[action]] may name: only the gateway files its gates (a tools/call
 * a `verdict = "gate"` grant held).
 */
export const EXECUTOR_TABLE: Record<ExecutorName | "mcp", Executor<unknown>> = {
  "message-user": messageUser,
  email,
  self: selfEdit,
  slack,
  discord,
  identity,
  purpose,
  task: fileTask,
  "task-list": setTasks,
  term,
  repo: repoPush,
  mcp: mcpCall,
};
