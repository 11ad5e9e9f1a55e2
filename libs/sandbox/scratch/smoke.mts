import { createSandbox } from "../src/index.ts";
const sb = await createSandbox();
const t0 = performance.now();
const r = await sb.run({ language: "python", code: "import os,sys\nprint('hi', os.getuid(), os.listdir('/'), sys.stdin.read())\nprint(os.environ)", stdin: "IN", files: {"a/b.txt": "x"} });
console.log(r, performance.now()-t0);
console.log(await sb.run({ language: "command", argv: ["ls", "-la", "/work", "/tmp/"] }));
console.log(await sb.run({ language: "python", code: "while True: pass", limits: {cpuSeconds: 1} }));
console.log(await sb.run({ language: "python", code: "x = bytearray(10**10)" }));
console.log(await sb.run({ language: "python", code: "import time; time.sleep(10)", limits: {wallMs: 500} }));
