import { hostBridgeAddress } from "./docker.ts";
import type { RosterRoot } from "./roster-root.ts";

/**
 * A host service's port tried from a real box of the deployment's worker
 * `elf`, the three ways a box could try it: through the gateway by the
 * host's Docker name and by loopback (each answered by the door), and around
 * the gateway to the host's bridge address (no route). Returns the three
 * answers (`403`, `403`, `000 exit=7|28` when the port is closed as it must
 * be) and how many of the door's refusals of that port were under `closed`.
 */
export async function reachFromBox(
  deployment: RosterRoot,
  port: number,
  path: string,
): Promise<{ answers: string[]; closed: number }> {
  const tries = [
    `curl -s -o /dev/null -w '%{http_code}' http://host.docker.internal:${port}${path}`,
    `curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:${port}${path}`,
    `curl -s --noproxy '*' --max-time 3 -o /dev/null -w '%{http_code}' http://${hostBridgeAddress()}:${port}${path}; echo " exit=$?"`,
  ];
  const exec = await deployment.roster(["box", "exec", "elf", "--", tries.join("; echo; ")], {
    timeoutMs: 60_000,
  });
  const answers = (JSON.parse(exec.stdout) as { stdout: string }).stdout.split("\n").slice(0, 3);
  const door = await deployment.roster(["gateway", "log", "--denied", "--json"]);
  const closed = door.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { rule: string | null; request: { port: number } })
    .filter((refusal) => refusal.rule === "closed" && refusal.request.port === port).length;
  return { answers, closed };
}
