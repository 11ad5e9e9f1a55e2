import { parquetWriteBuffer } from "hyparquet-writer";
import { parquetReadObjects } from "hyparquet";
import { gzipSync, gunzipSync } from "fflate";
const n = 10000;
const ids = Array.from({length: n}, () => Array.from({length: 150}, () => Math.floor(Math.random()*32000)));
for (const codec of ["SNAPPY", "GZIP", "UNCOMPRESSED"]) {
  let t = performance.now();
  const buf = parquetWriteBuffer({ columnData: [{ name: "ids", data: ids }], codec, compressors: { GZIP: (b: Uint8Array) => gzipSync(b) } } as any);
  const w = performance.now() - t; t = performance.now();
  const rows = await parquetReadObjects({ file: buf, compressors: { GZIP: (b: Uint8Array, size: number) => gunzipSync(b) } } as any);
  console.log(codec, buf.byteLength, w.toFixed(0), (performance.now()-t).toFixed(0), rows.length);
}
