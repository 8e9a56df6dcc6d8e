import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ChatSection } from "../../ground/config/config-schema.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerOfSubject } from "../../ground/config/subject.ts";
import { errorMessage } from "../../ground/errors.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";
import { isTrusted } from "../../records/channels/designations.ts";
import { readRecord, runDir } from "../../records/run-records/run-record.ts";
import { CHAT_PLATFORMS, platformOfChannel } from "../chat/platforms.ts";
import { appendActionAudit } from "./action-audit.ts";
import { approveGate, denyGate, executorFor } from "./desk.ts";
import { type Gate, listGates, readGate } from "./gates.ts";

/**
 * Approvals from chat. A pending gate proposed from a session is offered in
 * that session's channel when the operator trusts it (else in
 * `[chat] approvals_channel`), with exactly what would be sent and two
 * buttons. Only `[chat] approvers` may press them, only in a trusted
 * channel, only while the offer stands (`offer_ttl_mins`; the gate stays
 * pending for the desk after). The desk's own lock makes a second press a
 * no-op that names who decided; every press, refused or not, is audited
 * with who pressed.
 */
export interface Offer {
  gate_id: string;
  worker: string;
  channel: string;
  platform: string;
  expires_at: string;
}

export interface Answer {
  text: string;
  /** Shown only to the presser. */
  private: boolean;
  /** The gate is decided: the offer message is replaced by the outcome. */
  settled: boolean;
}

export const OFFER_TTL_DEFAULT_MIN = 60;

function offersFile(paths: RosterPaths): string {
  return join(paths.state, "chat-offers.json");
}

export class OfferDesk {
  private readonly offers = new Map<string, Offer>();

  constructor(
    private readonly paths: RosterPaths,
    private readonly chat: () => ChatSection | undefined,
  ) {
    try {
      const saved = JSON.parse(readFileSync(offersFile(paths), "utf8")) as Offer[];
      for (const offer of saved) this.offers.set(offer.gate_id, offer);
    } catch {
      // no offers made yet
    }
  }

  /** Pending gates not offered yet, with where each goes; they count as offered once returned. */
  due(
    canOffer: (worker: string, platform: string) => boolean,
    now = new Date(),
  ): Array<Offer & { text: string }> {
    const ttlMin = this.chat()?.offer_ttl_mins ?? OFFER_TTL_DEFAULT_MIN;
    const out: Array<Offer & { text: string }> = [];
    for (const gate of listGates(this.paths)) {
      if (gate.state !== "pending" || this.offers.has(gate.id)) continue;
      const channel = this.channelFor(gate);
      const platform = channel ? platformOfChannel(channel)?.name : undefined;
      const worker = workerOfSubject(gate.worker);
      if (!channel || !platform || !canOffer(worker, platform)) continue;
      const offer: Offer = {
        gate_id: gate.id,
        worker,
        channel,
        platform,
        expires_at: new Date(now.getTime() + ttlMin * 60_000).toISOString(),
      };
      this.offers.set(gate.id, offer);
      out.push({ ...offer, text: describe(this.paths, gate) });
    }
    if (out.length) this.save();
    return out;
  }

  async decide(
    press: { gate_id: string; verdict: "approve" | "deny"; user: string; channel: string },
    now = new Date(),
  ): Promise<Answer> {
    const refuse = (reason: string, gate?: Gate): Answer => {
      appendActionAudit(this.paths, {
        ...(gate ? { gate } : { intent: "?", worker: "?" }),
        disposition: "refused",
        reason: `chat ${press.verdict} by ${press.user} refused: ${reason}`,
        decided_by: press.user,
      });
      return { text: `Not done: ${reason}.`, private: true, settled: false };
    };
    const offer = this.offers.get(press.gate_id);
    const gate = offer ? readGate(this.paths, offer.worker, press.gate_id) : undefined;
    if (!offer || !gate || offer.channel !== press.channel)
      return refuse("no such offer in this channel", gate);
    if (!(this.chat()?.approvers ?? []).includes(press.user))
      return refuse("you are not one of the approvers in org.toml [chat] approvers", gate);
    if (!isTrusted(this.paths, press.channel))
      return refuse("approvals are taken only in a trusted channel", gate);
    if (gate.state !== "pending") {
      const by = gate.decided_by ? ` by ${gate.decided_by}` : "";
      return { text: `Already ${gate.state}${by}.`, private: true, settled: false };
    }
    if (Date.parse(offer.expires_at) < now.getTime())
      return refuse(
        `this offer expired at ${offer.expires_at}; the gate waits at the desk (roster approvals)`,
        gate,
      );
    try {
      const decided = await (press.verdict === "approve" ? approveGate : denyGate)(
        this.paths,
        gate,
        { by: press.user },
      );
      const outcome =
        decided.state === "executed"
          ? "approved and sent"
          : decided.state === "denied"
            ? "denied"
            : `approved, but it failed: ${decided.error ?? "unknown error"}`;
      return { text: `${gate.id} ${outcome} (by ${press.user}).`, private: false, settled: true };
    } catch (error) {
      return { text: `Not done: ${errorMessage(error)}.`, private: true, settled: false };
    }
  }

  private channelFor(gate: Gate): string | undefined {
    const worker = workerOfSubject(gate.worker);
    const record = gate.run_id
      ? readRecord(runDir(this.paths.state, worker, gate.run_id))
      : undefined;
    const from = record?.channel_id;
    if (from && hasListener(from) && isTrusted(this.paths, from)) return from;
    const fallback = this.chat()?.approvals_channel;
    return fallback && isTrusted(this.paths, fallback) ? fallback : undefined;
  }

  private save(): void {
    replaceFileSync(
      offersFile(this.paths),
      `${JSON.stringify([...this.offers.values()], null, 2)}\n`,
      { mode: 0o600 },
    );
  }
}

/** The offer's text: the summary, the worker's reason, and exactly what would be sent. */
function describe(paths: RosterPaths, gate: Gate): string {
  const executor = executorFor(gate);
  const worker = workerOfSubject(gate.worker);
  let rendered: string;
  try {
    rendered = executor
      ? executor.render(gate.payload, { paths, worker, runId: gate.run_id })
      : JSON.stringify(gate.payload);
  } catch {
    rendered = JSON.stringify(gate.payload);
  }
  return [
    `Approval needed: ${worker} proposes ${gate.intent} (${gate.id})`,
    gate.rationale ? `Why: ${gate.rationale}` : "",
    "",
    rendered,
  ]
    .filter((line, index) => line || index === 2)
    .join("\n");
}

/** Offers go only where a listener can post them and take the press: not the terminal. */
function hasListener(channelId: string): boolean {
  return CHAT_PLATFORMS.some(
    (platform) => platform.listener !== undefined && channelId.startsWith(platform.channelPrefix),
  );
}
