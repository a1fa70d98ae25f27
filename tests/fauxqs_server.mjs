// fauxqs's S3 on 127.0.0.1 only (its own server binds every address).
// usage: node fauxqs_server.mjs PORT BUCKET...
import { execFileSync } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";

const root = execFileSync("npm", ["root", "-g"], { encoding: "utf8" }).trim();
const { buildApp } = await import(pathToFileURL(path.join(root, "fauxqs", "dist", "app.js")).href);
const [port, ...buckets] = process.argv.slice(2);
const app = buildApp({ logger: false });
await app.listen({ host: "127.0.0.1", port: Number(port) });
for (const bucket of buckets) {
  await fetch(`http://127.0.0.1:${port}/${bucket}`, { method: "PUT" });
}
console.log("ready");
