import type { ExecutorName } from "../../config/action-schema.ts";
import { email } from "./email.ts";
import type { Executor } from "./executor.ts";
import { messageUser } from "./message-user.ts";
import { selfEdit } from "./self-edit.ts";

/** Every executor by the name `[[action]] executor = "…"` uses. */
export const EXECUTOR_TABLE: Record<ExecutorName, Executor<unknown>> = {
  "message-user": messageUser,
  email,
  self: selfEdit,
};
