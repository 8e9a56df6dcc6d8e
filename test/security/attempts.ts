/**
 * The escape suite's attempts: shell commands run in one box, each in a
 * subshell of its own, each succeeding only if the escape worked. Controls
 * are commands that must succeed (the same kind of command where nothing
 * stops it), so a suite whose tools are broken can't pass by failing
 * everything.
 */
export interface Attempt {
  name: string;
  group: string;
  /** bash; exit 0 means the attempt got through. */
  run: string;
}

export interface Outcome {
  name: string;
  group: string;
  /** held: the attempt failed, as it must; ESCAPED: it worked; the rest mean the probe broke. */
  result: "held" | "ESCAPED" | "no answer" | "control failed";
  detail?: string;
}

export type { ExecEnvelope as Envelope } from "../../runner/work/runs/exec-envelope.ts";

const encode = (text: string) => Buffer.from(text, "utf8").toString("base64");

export function probeScript(attempts: Attempt[], controls: Attempt[], prelude?: string): string {
  const lines = [
    // stdin closed, output dropped: only the verdict line is the attempt's
    'probe() { local cmd; cmd=$(printf %s "$2" | base64 -d); if ( eval "$cmd" ) </dev/null >/dev/null 2>&1; then echo "@@ $1 yes"; else echo "@@ $1 no"; fi; }',
  ];
  // work the attempts share (a controls entry proves it did its part)
  if (prelude)
    lines.push(`( eval "$(printf %s ${encode(prelude)} | base64 -d)" ) </dev/null 2>/dev/null`);
  for (const [index, attempt] of attempts.entries())
    lines.push(`probe a${index} ${encode(attempt.run)}`);
  for (const [index, control] of controls.entries())
    lines.push(`probe c${index} ${encode(control.run)}`);
  return lines.join("\n");
}

export function readOutcomes(stdout: string, attempts: Attempt[], controls: Attempt[]): Outcome[] {
  const answers = new Map<string, string>();
  for (const match of stdout.matchAll(/^@@ ([ac]\d+) (yes|no)$/gm))
    if (match[1] && match[2]) answers.set(match[1], match[2]);
  const out: Outcome[] = attempts.map((attempt, index) => {
    const answer = answers.get(`a${index}`);
    return {
      name: attempt.name,
      group: attempt.group,
      result: answer === "no" ? "held" : answer === "yes" ? "ESCAPED" : "no answer",
    };
  });
  for (const [index, control] of controls.entries())
    if (answers.get(`c${index}`) !== "yes")
      out.push({ name: control.name, group: control.group, result: "control failed" });
  return out;
}

export function formatOutcomes(outcomes: Outcome[]): string {
  const width = Math.max(...outcomes.map((outcome) => outcome.name.length));
  const lines = outcomes.map(
    (outcome) =>
      `  ${outcome.result === "held" ? "✓" : "✗"} ${outcome.group.padEnd(10)} ${outcome.name.padEnd(width)}  ${outcome.result}${outcome.detail ? ` (${outcome.detail})` : ""}`,
  );
  const held = outcomes.filter((outcome) => outcome.result === "held").length;
  return [`escape attempts: ${held} of ${outcomes.length} held`, ...lines].join("\n");
}
