// Draws the best program's solution (SolutionPicture of the protocol) on a
// canvas, in the theme's colours: the packing's circles in the unit square,
// the step function over its autoconvolution, or a +-1 matrix as a grid.
import type { SolutionPicture } from '../../../src/protocol/dashboardMessages';
import type { ThemeColours } from '../theme';

const SIZE = { circles: [240, 240], steps: [320, 200], matrix: [240, 240] } as const;

export function drawSolutionPicture(canvas: HTMLCanvasElement, picture: SolutionPicture, theme: ThemeColours): void {
  const [width, height] = SIZE[picture.kind];
  const scale = window.devicePixelRatio || 1;
  canvas.width = width * scale;
  canvas.height = height * scale;
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext('2d');
  if (!ctx) return;
  ctx.setTransform(scale, 0, 0, scale, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.lineWidth = 1;
  switch (picture.kind) {
    case 'circles': {
      canvas.setAttribute('aria-label', `best packing: ${picture.circles.length} circles in the unit square`);
      const pad = 6;
      const side = Math.min(width, height) - 2 * pad;
      ctx.strokeStyle = theme.muted;
      ctx.strokeRect(pad, pad, side, side);
      ctx.strokeStyle = theme.blue;
      ctx.fillStyle = withAlpha(theme.blue, 0.18);
      for (const c of picture.circles) {
        ctx.beginPath();
        // y grows upwards in the task, downwards on a canvas.
        ctx.arc(pad + c.x * side, pad + (1 - c.y) * side, Math.max(0, c.r * side), 0, 2 * Math.PI);
        ctx.fill();
        ctx.stroke();
      }
      return;
    }
    case 'steps': {
      canvas.setAttribute('aria-label', `best step function (${picture.heights.length} steps) and its autoconvolution`);
      const half = height / 2;
      plot(ctx, picture.heights, 0, half - 4, width, theme.green, true);
      plot(ctx, picture.autoconvolution, half + 4, height, width, theme.orange, false);
      ctx.fillStyle = theme.muted;
      ctx.font = '10px sans-serif';
      ctx.fillText('f', 4, 12);
      ctx.fillText('f * f', 4, half + 16);
      return;
    }
    case 'matrix': {
      canvas.setAttribute('aria-label', `best matrix: ${picture.rows.length} rows`);
      const n = Math.max(picture.rows.length, ...picture.rows.map((r) => r.length));
      const cell = Math.min(width, height) / n;
      for (const [i, row] of picture.rows.entries()) {
        for (const [j, v] of row.entries()) {
          ctx.fillStyle = v > 0 ? theme.foreground : withAlpha(theme.foreground, 0.12);
          ctx.fillRect(j * cell, i * cell, Math.max(1, cell - 0.5), Math.max(1, cell - 0.5));
        }
      }
      return;
    }
  }
}

/** Values as bars (a step function) or a line, between y0 and y1, scaled to their maximum. */
function plot(
  ctx: CanvasRenderingContext2D,
  values: readonly number[],
  y0: number,
  y1: number,
  width: number,
  colour: string,
  bars: boolean,
): void {
  const max = Math.max(...values, 0) || 1;
  const min = Math.min(...values, 0);
  const span = max - min || 1;
  const y = (v: number): number => y1 - ((v - min) / span) * (y1 - y0);
  const dx = width / values.length;
  ctx.strokeStyle = colour;
  ctx.fillStyle = withAlpha(colour, 0.35);
  if (bars) {
    for (const [i, v] of values.entries()) ctx.fillRect(i * dx, Math.min(y(v), y(0)), Math.max(dx, 0.5), Math.abs(y(v) - y(0)));
    return;
  }
  ctx.beginPath();
  for (const [i, v] of values.entries()) (i === 0 ? ctx.moveTo : ctx.lineTo).call(ctx, i * dx, y(v));
  ctx.stroke();
}

function withAlpha(colour: string, alpha: number): string {
  const hex = /^#([0-9a-f]{6})/i.exec(colour.trim());
  if (!hex) return colour;
  const n = parseInt(hex[1] as string, 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
}
