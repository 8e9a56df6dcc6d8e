/**
 * The name a worker goes by wherever the org's rules meet it: a grant's or a
 * limit's scope, a run token's subject, an audit line, a gate's filer —
 * `org/<worker>`. Built and read here alone, so the form is one fact.
 */
export function workerSubject(worker: string): string {
  return `org/${worker}`;
}

/** The worker's name from a subject ("org/elf" → "elf"); any other text as it is. */
export function workerOfSubject(subject: string): string {
  return subject.replace(/^org\//, "");
}
