/**
 * Questions and answers between the gateway and its shards (shards.ts,
 * shard.ts) over the fork's IPC channel: a question carries an id, its answer
 * names that id, and a note needs no answer. A question whose other end is
 * gone is refused at once, never left waiting. Both ends are roster's own
 * processes: what crosses is already judged (a run's identity is where its
 * connection arrived, in the shard that holds its door).
 */
export interface Endpoint {
  send?: ((message: object) => boolean) | undefined;
  on(event: "message", listener: (message: unknown) => void): unknown;
  off(event: "message", listener: (message: unknown) => void): unknown;
}

/** What a question's handler throws, carried back whole: a status (a door's 404) and its words. */
export class LinkError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

type Handler = (payload: unknown) => unknown;

interface Envelope {
  roster_link: 1;
  id?: number;
  kind?: string;
  payload?: unknown;
  answers?: number;
  value?: unknown;
  error?: { message: string; status?: number };
}

const isEnvelope = (message: unknown): message is Envelope =>
  typeof message === "object" && message !== null && (message as Envelope).roster_link === 1;

export class Link {
  private next = 1;
  private readonly waiting = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: Error) => void }
  >();
  private closed: Error | undefined;
  private readonly listener = (message: unknown) => this.receive(message);

  constructor(
    private readonly endpoint: Endpoint,
    private readonly handlers: Record<string, Handler>,
  ) {
    endpoint.on("message", this.listener);
  }

  ask<T>(kind: string, payload?: unknown): Promise<T> {
    if (this.closed) return Promise.reject(this.closed);
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
      if (!this.post({ roster_link: 1, id, kind, payload })) {
        this.waiting.delete(id);
        reject(new LinkError(`the gateway shard's channel is closed (asking ${kind})`));
      }
    });
  }

  tell(kind: string, payload?: unknown): void {
    if (!this.closed) this.post({ roster_link: 1, kind, payload });
  }

  /** The other end is gone: every question still waiting is refused with `error`, and so is every new one. */
  close(error: Error): void {
    this.closed = error;
    this.endpoint.off("message", this.listener);
    for (const waiter of this.waiting.values()) waiter.reject(error);
    this.waiting.clear();
  }

  private post(envelope: Envelope): boolean {
    try {
      return this.endpoint.send?.(envelope) ?? false;
    } catch {
      return false;
    }
  }

  private receive(message: unknown): void {
    if (!isEnvelope(message)) return;
    if (message.answers !== undefined) {
      const waiter = this.waiting.get(message.answers);
      this.waiting.delete(message.answers);
      if (!waiter) return;
      if (message.error) waiter.reject(new LinkError(message.error.message, message.error.status));
      else waiter.resolve(message.value);
      return;
    }
    const handler = message.kind ? this.handlers[message.kind] : undefined;
    const id = message.id;
    const answer = (reply: Omit<Envelope, "roster_link" | "answers">) => {
      if (id !== undefined) this.post({ roster_link: 1, answers: id, ...reply });
    };
    if (!handler) {
      answer({ error: { message: `no handler for ${message.kind ?? "a message with no kind"}` } });
      return;
    }
    Promise.resolve()
      .then(() => handler(message.payload))
      .then(
        (value) => answer({ value }),
        (error: unknown) => {
          const status =
            typeof error === "object" && error !== null
              ? (error as { status?: unknown }).status
              : undefined;
          answer({
            error: {
              message: error instanceof Error ? error.message : String(error),
              ...(typeof status === "number" ? { status } : {}),
            },
          });
        },
      );
  }
}
