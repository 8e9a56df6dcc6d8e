import { startGatewayEnv } from "./test/support/gateway-env.ts";
import { Upstream } from "./test/support/upstream.ts";

console.log("a");
const api = await Upstream.start({ tls: true, names: ["api.test", "tunnel.test", "127.0.0.1"] });
console.log("b");
const env = await startGatewayEnv("");
console.log("c");
await env.restart();
console.log("d");
await env.cleanup();
console.log("e");
await api.stop();
console.log("f");
