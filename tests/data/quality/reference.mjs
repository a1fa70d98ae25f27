// Writes reference.txt: SSIM of each test PGM against its image's full
// fidelity, computed by ssim.js (a line-by-line port of Wang's MATLAB
// ssim_index), so the project's SSIM is checked against an independent
// implementation.
//
// usage: in a directory where `npm install ssim.js@3.5.0` was run,
//        node PCR/tests/data/quality/reference.mjs
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(join(process.cwd(), 'package.json'));
const { ssim } = require('ssim.js');
const here = dirname(fileURLToPath(import.meta.url));

// A binary PGM (P5, maxval 255) as RGBA with R = G = B, which ssim.js's
// grey conversion maps back to the same values.
function readPgm(path) {
  const bytes = readFileSync(path);
  const header = bytes.toString('latin1', 0, 64).match(/^P5\s+(\d+)\s+(\d+)\s+255\s/);
  if (!header) throw new Error(`${path}: not an 8-bit binary PGM`);
  const [width, height] = [Number(header[1]), Number(header[2])];
  const pixels = bytes.subarray(header[0].length);
  const data = new Uint8ClampedArray(width * height * 4);
  for (let i = 0; i < width * height; ++i) {
    data.set([pixels[i], pixels[i], pixels[i], 255], 4 * i);
  }
  return { data, width, height };
}

const lines = ['# test-pgm reference-pgm ssim (ssim.js, ssim: original, no downsampling)'];
const files = readdirSync(here).filter((f) => f.endsWith('.pgm')).sort();
for (const file of files) {
  const [, image] = file.match(/^(.*)-(\d+)\.pgm$/);
  const full = `${image}-10.pgm`;
  if (file === full) continue;
  const { mssim } = ssim(readPgm(join(here, full)), readPgm(join(here, file)),
    { ssim: 'original', downsample: false });
  lines.push(`${file} ${full} ${mssim.toPrecision(12)}`);
}
writeFileSync(join(here, 'reference.txt'), `${lines.join('\n')}\n`);
