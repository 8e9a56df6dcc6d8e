import { rmSync } from "node:fs";
import { type Static, Type } from "@sinclair/typebox";
import type { Identity } from "../../boundary/gateway/doors/identity.ts";
import type {
  ActionHandler,
  ActionRequest,
  ActionResponse,
  HeldMcpCall,
} from "../../boundary/gateway/exchange/action-host.ts";
import type { ConfigSource } from "../../boundary/gateway/settings/config-source.ts";
import type { ActionGrant, Scoped } from "../../ground/config/action-schema.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerOfSubject } from "../../ground/config/subject.ts";
import { errorMessage } from "../../ground/errors.ts";
import { appendJournal, readJournal } from "../../records/journal/journal.ts";
import { appendActionAudit } from "./action-audit.ts";
import { grantFor } from "./action-grant.ts";
import { executorFor } from "./desk.ts";
import { deskFull, ProposalShare } from "./desk-bounds.ts";
import { type Gate, listGates, newGateId, sentPartsFile, writeGate } from "./gates.ts";
import { holdMcpCall } from "./held-calls.ts";
import { RouteShares } from "./route-shares.ts";
import { reportOutcome } from "./run-outcome.ts";
import { firstProblem } from "./schema-problem.ts";
import { decideTrust } from "./trust.ts";
import { channelTrust } from "./trusted-channels.ts";

/**
 * The action host behind https://actions.roster.internal (the gateway hands it
 * every request for that name). The worker and run come from the caller's
 * token, never from the body. A proposal needs an `[[action]]` grant in scope
 * (else it is refused, not gated); trust then runs it at once or files a gate
 * for the approval desk.
 */
const MAX_ENVELOPE_BYTES = 256 * 1024;
/** The most gates GET /gates answers with (the newest). */
const GATES_ANSWERED = 50;

const Envelope = Type.Object(
  {
    intent: Type.String({ minLength: 1, maxLength: 64 }),
    payload: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    rationale: Type.Optional(Type.String({ maxLength: 4000 })),
    task_id: Type.Optional(Type.Union([Type.String({ maxLength: 128 }), Type.Null()])),
    // the box may send a run id; the token's wins (kept so old tools still validate)
    run_id: Type.Optional(Type.Union([Type.String({ maxLength: 128 }), Type.Null()])),
  },
  { additionalProperties: false },
);
type Envelope = Static<typeof Envelope>;

const reply = (status: number, body: Record<string, unknown>): ActionResponse => ({ status, body });

/** A proposal that passed admission. */
interface Admitted {
  envelope: Envelope;
  grant: Scoped<ActionGrant>;
  executor: NonNullable<ReturnType<typeof executorFor>>;
  payload: Record<string, unknown>;
  config: ReturnType<ConfigSource["get"]>;
}

export class ActionHost implements ActionHandler {
  /** Each run's share of the proposals this host takes (desk-bounds.ts). */
  private readonly proposals = new ProposalShare();
  /** Each run's share of the reads and outcome reports (route-shares.ts). */
  private readonly routes = new RouteShares();

  constructor(
    private readonly paths: RosterPaths,
    private readonly config: ConfigSource,
  ) {}

  async handle(request: ActionRequest): Promise<ActionResponse> {
    const caller = request.caller;
    if (!caller)
      return reply(403, {
        status: "denied",
        reason: "no run token: only a box's own run may propose",
      });
    const worker = workerOfSubject(caller.subject);
    const route = `${request.method} ${request.path}`;
    const kind =
      route === "POST /outcome" ? "outcome" : route.startsWith("GET ") ? "read" : undefined;
    const over = kind && caller.runId ? this.routes.refused(kind, caller.runId) : undefined;
    if (over)
      return reply(429, {
        status: "denied",
        reason: over.reason,
        retry_after_secs: over.retryAfterSecs,
      });
    if (route === "POST /submit")
      return this.submit(request.body, caller.subject, worker, caller.runId, caller.origins);
    if (route === "GET /gates")
      return reply(200, {
        // the newest GATES_ANSWERED: a worker's gates pile up for as long as it lives
        gates: listGates(this.paths, worker)
          .slice(-GATES_ANSWERED)
          .map((gate) => ({
            id: gate.id,
            intent: gate.intent,
            state: gate.state,
            filed_at: gate.filed_at,
            decided_by: gate.decided_by ?? null,
            decided_at: gate.decided_at ?? null,
            executed_at: gate.executed_at ?? null,
            ...(gate.decision_note ? { note: gate.decision_note } : {}),
            ...(gate.error ? { error: gate.error } : {}),
          })),
      });
    if (route === "GET /journal")
      return reply(200, { events: readJournal(this.paths, worker, 30) });
    if (route === "POST /outcome")
      return reportOutcome(this.paths, request.body, worker, caller.runId);
    return reply(404, { status: "error", error: "unknown action endpoint" });
  }

  /**
   * A proposal the host makes on a run's behalf after it ended (a task's
   * answer back to the channel it was filed from): the same admission,
   * trust, gate, journal and audit as one the box sends.
   */
  propose(caller: Identity, envelope: Record<string, unknown>): Promise<ActionResponse> {
    const body = Buffer.from(JSON.stringify(envelope));
    return this.submit(
      body,
      caller.subject,
      workerOfSubject(caller.subject),
      caller.runId,
      caller.origins,
    );
  }

  /** Why this proposal waits for a human whatever trust says; when in doubt, a human decides. */
  private async mustGate(
    executor: NonNullable<ReturnType<typeof executorFor>>,
    payload: unknown,
    worker: string,
    runId: string | null,
  ): Promise<string | undefined> {
    try {
      return await executor.mustGate?.(payload, { paths: this.paths, worker, runId });
    } catch (error) {
      return `it could not be checked for what always waits: ${errorMessage(error)}`;
    }
  }

  /** A run past its share of proposals (desk-bounds.ts), said in the journal once a streak. */
  private overShare(worker: string, runId: string): ActionResponse | undefined {
    const over = runId ? this.proposals.refused(runId) : undefined;
    if (!over) return undefined;
    if (over.first)
      appendJournal(this.paths, {
        worker,
        run_id: runId,
        kind: "action-refused",
        detail: over.reason,
      });
    return reply(429, {
      status: "denied",
      reason: over.reason,
      retry_after_secs: over.retryAfterSecs,
    });
  }

  /**
   * A proposal's admission, in order: the envelope, the config, an action
   * grant in scope, the payload against its executor's schema, the
   * executor's precheck. What passes comes back to be run or gated.
   */
  private async admit(
    body: Buffer,
    subject: string,
    worker: string,
    runId: string,
    origins: string[] | undefined,
  ): Promise<Admitted | { refusal: ActionResponse }> {
    const refuse = (status: number, answer: Record<string, unknown>) => ({
      refusal: reply(status, answer),
    });
    if (body.length > MAX_ENVELOPE_BYTES)
      return refuse(400, {
        status: "error",
        error: `bad envelope: over ${MAX_ENVELOPE_BYTES} bytes`,
      });
    let envelope: Envelope;
    try {
      envelope = JSON.parse(body.toString("utf8")) as Envelope;
    } catch {
      return refuse(400, { status: "error", error: "bad envelope: not JSON" });
    }
    const problem = firstProblem(Envelope, envelope, "");
    if (problem) return refuse(400, { status: "error", error: `bad envelope: ${problem}` });
    // past the envelope, a proposal is written down (journal, audit) or runs: each counts
    const overShare = this.overShare(worker, runId);
    if (overShare) return { refusal: overShare };

    const config = this.config.get();
    const broken = this.config.brokenReason(config);
    if (broken) return refuse(403, { status: "denied", reason: broken });
    const found = grantFor(config.actions, envelope.intent, subject, origins);
    const runIdOrNull = runId || null;
    if ("refused" in found) {
      const reason = found.refused;
      appendJournal(this.paths, {
        worker,
        run_id: runIdOrNull,
        kind: "action-refused",
        intent: envelope.intent,
        detail: reason,
      });
      appendActionAudit(this.paths, {
        worker: subject,
        run_id: runIdOrNull,
        intent: envelope.intent,
        disposition: "refused",
        reason,
      });
      return refuse(403, { status: "denied", reason });
    }
    const { grant } = found;
    const executor = executorFor(grant);
    const payload = envelope.payload ?? {};
    const payloadProblem = executor
      ? firstProblem(executor.schema, payload, "payload")
      : "no executor";
    if (!executor || payloadProblem)
      return refuse(400, { status: "error", error: `bad envelope: ${payloadProblem}` });
    let refused: string | undefined;
    try {
      refused = await executor.precheck?.(payload, {
        paths: this.paths,
        worker,
        runId: runId || null,
      });
    } catch (error) {
      return refuse(500, {
        status: "error",
        error: `the proposal could not be checked: ${errorMessage(error)}`,
      });
    }
    if (refused) {
      appendJournal(this.paths, {
        worker,
        run_id: runId || null,
        kind: "action-refused",
        intent: grant.name,
        detail: refused,
      });
      return refuse(409, { status: "error", error: refused });
    }
    return { envelope, grant, executor, payload, config };
  }

  private async submit(
    body: Buffer,
    subject: string,
    worker: string,
    runId: string,
    origins: string[] | undefined,
  ): Promise<ActionResponse> {
    const admitted = await this.admit(body, subject, worker, runId, origins);
    if ("refusal" in admitted) return admitted.refusal;
    const { envelope, grant, executor, payload, config } = admitted;
    const runIdOrNull = runId || null;
    const gate: Gate = {
      id: newGateId(),
      worker: subject,
      intent: grant.name,
      executor: grant.executor,
      payload,
      rationale: envelope.rationale ?? "",
      run_id: runIdOrNull,
      task_id: envelope.task_id ?? null,
      state: "pending",
      filed_at: new Date().toISOString(),
      ...(grant.wake_on_resolve ? { wake_on_resolve: true } : {}),
    };
    const summary = executor.summary(payload);
    appendJournal(this.paths, {
      worker,
      run_id: runIdOrNull,
      kind: "action-proposed",
      intent: grant.name,
      summary,
    });
    const forced = await this.mustGate(executor, payload, worker, runIdOrNull);
    const trust = forced
      ? { run: "gate" as const, because: forced }
      : decideTrust({
          grant,
          rules: config.trust,
          subject,
          payload,
          history: () => listGates(this.paths, worker),
          channels: channelTrust(this.paths),
          origins,
        });
    if (trust.run === "auto") return this.runNow(grant, gate, summary, trust.because);
    const full = deskFull(this.paths, worker);
    if (full) {
      appendJournal(this.paths, {
        worker,
        run_id: runIdOrNull,
        kind: "action-refused",
        intent: grant.name,
        detail: full,
      });
      return reply(429, { status: "denied", reason: full });
    }
    try {
      writeGate(this.paths, gate);
    } catch (error) {
      return reply(500, {
        status: "error",
        error: `the gate could not be saved: ${errorMessage(error)}`,
      });
    }
    appendJournal(this.paths, {
      worker,
      run_id: runIdOrNull,
      kind: "gate-filed",
      intent: grant.name,
      gate_id: gate.id,
      summary,
      detail: trust.because,
    });
    appendActionAudit(this.paths, { gate, disposition: "gated", reason: trust.because });
    return reply(202, {
      status: "pending",
      gate_id: gate.id,
      message: `held for human approval (${trust.because}); a later run sees the outcome in ~/self/journal`,
    });
  }

  /** A tools/call the gateway held for the desk (held-calls.ts). */
  holdMcpCall(call: HeldMcpCall): Promise<{ gateId: string }> {
    return holdMcpCall(this.paths, call);
  }

  /** Auto: no gate is filed (so it never counts toward earned trust), the outcome is journaled. */
  private async runNow(
    grant: Scoped<ActionGrant>,
    gate: Gate,
    summary: string,
    because: string,
  ): Promise<ActionResponse> {
    const worker = workerOfSubject(gate.worker);
    const executor = executorFor(grant);
    // admission found it; only a platform gone from the list since could lose it
    if (!executor) throw new Error(`no executor "${grant.executor}" in this roster`);
    try {
      const result = await executor.run(gate.payload, {
        paths: this.paths,
        worker,
        key: gate.id,
        runId: gate.run_id,
      });
      appendJournal(this.paths, {
        worker,
        run_id: gate.run_id,
        kind: "executed",
        intent: gate.intent,
        summary,
        detail: result,
      });
      appendActionAudit(this.paths, {
        gate: { ...gate, result },
        disposition: "executed",
        reason: because,
      });
      return reply(200, { status: "done", result });
    } catch (error) {
      const message = errorMessage(error);
      appendJournal(this.paths, {
        worker,
        run_id: gate.run_id,
        kind: "failed",
        intent: gate.intent,
        summary,
        detail: message,
      });
      appendActionAudit(this.paths, {
        gate: { ...gate, error: message },
        disposition: "failed",
        reason: because,
      });
      return reply(502, { status: "error", error: message });
    } finally {
      // an auto action is never retried under its id: what a chat send delivered needs no keeping
      rmSync(sentPartsFile(this.paths, { worker, id: gate.id }), { force: true });
    }
  }
}
