// `thetaevolve report --png`: a picture of the report's progress chart, taken
// by a headless Chromium found on PATH (the product ships none). Without one
// the command fails saying what to install.
import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { InputError } from './io';

/** The names a Chromium goes by on PATH, in the order they are looked for. */
export const CHROMIUM_NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable', 'chrome'] as const;

export const NO_CHROMIUM_MESSAGE =
  'no Chromium on PATH to draw the picture (looked for ' +
  CHROMIUM_NAMES.join(', ') +
  '): install one (Debian/Ubuntu: apt install chromium; macOS: brew install --cask chromium), or leave out --png';

/** The first Chromium on `pathVariable`, or null. */
export function findChromium(pathVariable: string | undefined): string | null {
  for (const dir of (pathVariable ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    for (const name of CHROMIUM_NAMES) {
      const candidate = path.join(dir, name);
      try {
        accessSync(candidate, constants.X_OK);
        return candidate;
      } catch {
        // Not here.
      }
    }
  }
  return null;
}

/** Draws `htmlFile`'s progress chart (`#picture`) into `pngFile` with headless Chromium. */
export async function renderPicture(chromium: string, htmlFile: string, pngFile: string, signal: AbortSignal): Promise<void> {
  const profile = await mkdtemp(path.join(tmpdir(), 'thetaevolve-chromium-'));
  const args = [
    '--headless',
    '--disable-gpu',
    '--hide-scrollbars',
    '--no-first-run',
    '--no-default-browser-check',
    '--mute-audio',
    `--user-data-dir=${profile}`,
    '--window-size=1200,640',
    '--force-device-scale-factor=1',
    // Enough page time for the chart's first draw; the page loads nothing from outside the file.
    '--virtual-time-budget=10000',
    `--screenshot=${path.resolve(pngFile)}`,
    // Chromium refuses its own sandbox as root; the page is our report, whose CSP loads and runs only what is inline.
    ...(process.getuid?.() === 0 ? ['--no-sandbox'] : []),
    `${pathToFileURL(path.resolve(htmlFile)).href}#picture`,
  ];
  try {
    await new Promise<void>((resolve, reject) => {
      execFile(chromium, args, { signal, timeout: 90_000, maxBuffer: 4 * 1024 * 1024 }, (err, _stdout, stderr) => {
        if (err) {
          const last = String(stderr).trim().split('\n').pop() ?? '';
          reject(new InputError(`${chromium} could not draw the picture: ${last || err.message}`, { cause: err }));
        } else resolve();
      });
    });
  } finally {
    await rm(profile, { recursive: true, force: true });
  }
  if (!existsSync(pngFile) || (await stat(pngFile)).size === 0) throw new InputError(`${chromium} wrote no picture to ${pngFile}`);
}
