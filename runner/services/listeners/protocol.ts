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
    };

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
  | { type: "decided"; ref: string; text: string; private: boolean; settled: boolean };

export function isListenerMessage(value: unknown): value is ListenerMessage {
  if (typeof value !== "object" || value === null) return false;
  const type = (value as { type?: unknown }).type;
  return (
    type === "status" ||
    type === "event" ||
    type === "inbound" ||
    type === "record" ||
    type === "decide"
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
      type === "decided")
  );
}
