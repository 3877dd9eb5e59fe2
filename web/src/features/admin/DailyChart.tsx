import { useEffect, useRef } from 'react';
import type uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Row } from './api';

const HEIGHT = 240;

/** The series the chart draws from each day's figures, with their colours. */
const SERIES = [
  { label: 'Visitors', value: (row: Row) => row.visitors, stroke: '#2563eb' },
  { label: 'Checkouts', value: (row: Row) => row.checkout, stroke: '#d97706' },
  { label: 'Trials', value: (row: Row) => row.trial, stroke: '#059669' },
  { label: 'Paid', value: (row: Row) => row.paid, stroke: '#7c3aed' },
] as const;

/** Every day of the range, with the figures of those that had any (uPlot wants aligned arrays). */
export function alignedDays(from: string, to: string, rows: Row[]): uPlot.AlignedData {
  const byDay = new Map(rows.map((row) => [row.key, row]));
  const xs: number[] = [];
  const ys: number[][] = SERIES.map(() => []);
  const end = Date.parse(`${to}T00:00:00Z`);
  for (let day = Date.parse(`${from}T00:00:00Z`); day <= end; day += 86_400_000) {
    xs.push(day / 1000);
    const row = byDay.get(new Date(day).toISOString().slice(0, 10));
    SERIES.forEach((series, index) => ys[index].push(row ? series.value(row) : 0));
  }
  return [xs, ...ys];
}

/**
 * Visitors, checkouts, trials and first payments per day over the range (uPlot, drawn on a
 * canvas that follows the card's width). The day table below holds the same figures as text.
 */
export function DailyChart({ from, to, rows, label }: { from: string; to: string; rows: Row[]; label: string }) {
  const holder = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const element = holder.current;
    if (!element) return undefined;
    let chart: uPlot | undefined;
    let observer: ResizeObserver | undefined;
    let cancelled = false;
    import('uplot')
      .then(({ default: UPlot }) => {
        if (cancelled) return;
        const options: uPlot.Options = {
          width: Math.max(element.clientWidth, 280),
          height: HEIGHT,
          series: [{}, ...SERIES.map((series) => ({ label: series.label, stroke: series.stroke, width: 2 }))],
          axes: [{}, { size: 48 }],
          scales: { x: { time: true } },
          legend: { live: false },
        };
        chart = new UPlot(options, alignedDays(from, to, rows), element);
        if (typeof ResizeObserver !== 'undefined') {
          observer = new ResizeObserver(() => {
            chart?.setSize({ width: Math.max(element.clientWidth, 280), height: HEIGHT });
          });
          observer.observe(element);
        }
      })
      .catch(() => {
        // Without a canvas (an old browser, a test) the day table says the same.
      });
    return () => {
      cancelled = true;
      observer?.disconnect();
      chart?.destroy();
    };
  }, [from, to, rows]);

  return <div ref={holder} className="admin-chart" role="img" aria-label={label} />;
}
