import type { Inbound } from "../../work/sessions/router.ts";

/**
 * What a listener child (`roster server listener`) and the server say to each
 * other over the fork's IPC channel. The child speaks to the chat platform;
 * the server owns sessions. A listener therefore holds only its bot's token,
 * and whatever a platform sends it can at worst crash that child, which the
 * server restarts; the gateway and the other listeners never notice.
 */
export type ConnectionState =
  | "connecting"
  | "connected"
  | "reconnecting"
  | "unauthorised"
  | "crashed"
  | "stopped";

/** Child → server. */
export type ListenerMessage =
  | { type: "status"; state: ConnectionState; detail?: string }
  /** A platform event happened (for "last event" in the operator's view). */
  | { type: "event" }
  /** A message that wakes the worker; `ref` comes back in every answer about it. */
  | { type: "inbound"; ref: string; inbound: Inbound }
  /** A message kept as context only (a room in mention mode, not addressed to the bot). */
  | { type: "record"; inbound: Inbound }
  /** Someone pressed approve or deny on an offer; `ref` names the press for the answer. */
  | {
      type: "decide";
      ref: string;
      gate_id: string;
      verdict: "approve" | "deny";
      /** platform:user-id */
      user: string;
      channel: string;
    }
  /** Someone gave a command (a Discord application command, a Slack slash command). */
  | { type: "command"; ref: string; command: CommandRequest }
  /** Someone is typing an option that completes (a gate, a task, a run, a worker). */
  | { type: "complete"; ref: string; complete: CompleteRequest };

/** A command as the child read it from its platform; the server judges and answers it. */
export interface CommandRequest {
  channel: string;
  /** platform:user-id (the server puts the binding's platform on it whatever the child says). */
  user: string;
  /** What the platform said of the person with this command. */
  platform?: {
    /** The guild or workspace the facts are about (they count only where org.toml names it). */
    server?: string;
    roles?: string[];
    manageServer?: boolean;
    workspaceAdmin?: boolean;
  };
  /** A typed line (`/task add …`), or a command with its part and named options. */
  line?: string;
  named?: { command: string; sub?: string; options: Record<string, string> };
}

export interface CompleteRequest {
  channel: string;
  user: string;
  platform?: CommandRequest["platform"];
  command: string;
  sub?: string;
  option: string;
  partial: string;
}

/** Server → child, about one inbound message. */
export type ServerMessage =
  /** In the channel's history and queued: handled from here on (advance the cursor). */
  | { type: "recorded"; ref: string }
  | { type: "turn-started"; ref: string }
  | { type: "turn-done"; ref: string }
  | { type: "turn-failed"; ref: string; error: string }
  /** Post this gate's offer (exactly what would be sent) with approve / deny buttons; ref = gate id. */
  | { type: "offer"; ref: string; channel: string; text: string; expires_at: string }
  /** The answer to a press: shown only to the presser when `private`; `settled` replaces the offer. */
  | { type: "decided"; ref: string; text: string; private: boolean; settled: boolean }
  /** The answer to a command: for the room, or only for the person who gave it. */
  | { type: "answered"; ref: string; text: string; room: boolean }
  /** The choices for an option being typed (at most 25). */
  | { type: "completed"; ref: string; choices: Array<{ name: string; value: string }> };

export function isListenerMessage(value: unknown): value is ListenerMessage {
  if (typeof value !== "object" || value === null) return false;
  const type = (value as { type?: unknown }).type;
  return (
    type === "status" ||
    type === "event" ||
    type === "inbound" ||
    type === "record" ||
    type === "decide" ||
    type === "command" ||
    type === "complete"
  );
}

export function isServerMessage(value: unknown): value is ServerMessage {
  if (typeof value !== "object" || value === null) return false;
  const { type, ref } = value as { type?: unknown; ref?: unknown };
  return (
    typeof ref === "string" &&
    (type === "recorded" ||
      type === "turn-started" ||
      type === "turn-done" ||
      type === "turn-failed" ||
      type === "offer" ||
      type === "decided" ||
      type === "answered" ||
      type === "completed")
  );
}
