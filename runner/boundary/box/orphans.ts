import { processAlive } from "../../ground/files/process-alive.ts";
import type { BoxEngine } from "./engine.ts";
import { CONTAINER_LABELS } from "./layout.ts";

/**
 * Boxes whose runner is gone (killed, crashed, machine slept): found by their
 * labels at the next start and killed, so a box never outlives its governance.
 * Only this deployment's: another's runner pid may live in another pid
 * namespace, or its box be a test's on purpose. A box with no deployment label
 * was started before boxes carried one, and is swept by any.
 */
export interface Orphan {
  containerId: string;
  worker: string;
  runId: string;
}

export async function reapOrphans(engine: BoxEngine, deployment: string): Promise<Orphan[]> {
  const boxes = await engine.listBoxes(CONTAINER_LABELS.run);
  const reaped: Orphan[] = [];
  for (const { id, labels } of boxes) {
    const owner = labels[CONTAINER_LABELS.deployment];
    if (owner !== undefined && owner !== deployment) continue;
    const pid = Number(labels[CONTAINER_LABELS.runnerPid]);
    if (processAlive(pid)) continue;
    await engine.removeBox(id);
    reaped.push({
      containerId: id,
      worker: labels[CONTAINER_LABELS.worker] ?? "",
      runId: labels[CONTAINER_LABELS.run] ?? "",
    });
  }
  return reaped;
}
