import type Docker from "dockerode";
import { followStream } from "./docker.ts";
import type { Progress } from "./progress.ts";

/**
 * Follows a classic-builder build to its end: each `Step n/m` becomes a
 * progress step (prefixed, shortened), every other line a detail. Resolves
 * with the build's error, if it reported one, and every line it printed, so
 * the caller can say what failed in its own words.
 */
export async function followBuild(
  docker: Docker,
  stream: NodeJS.ReadableStream,
  progress: Progress,
  prefix: string,
): Promise<{ failure: string | undefined; output: string[] }> {
  let failure: string | undefined;
  const output: string[] = [];
  await followStream(docker, stream, (message) => {
    if (message.error) {
      failure = message.errorDetail?.message ?? message.error;
      return;
    }
    for (const line of (message.stream ?? "").split("\n")) {
      const text = line.trimEnd();
      if (!text) continue;
      output.push(text);
      if (/^Step \d+\/\d+ :/.test(text)) progress.step(`${prefix}: ${truncate(text, 110)}`);
      else progress.detail(text);
    }
  });
  return { failure, output };
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
