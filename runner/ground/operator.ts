import { userInfo } from "node:os";

/** Who acts from this host's command line, as records name them: `cli:<login>`. */
export function operatorName(env: NodeJS.ProcessEnv = process.env): string {
  return `cli:${env.USER ?? userInfo().username}`;
}
