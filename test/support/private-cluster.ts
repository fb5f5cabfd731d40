// A throwaway three-master Redis Cluster for one test file, for the faults a shared cluster
// must never see (a master killed and restarted empty). No persistence; each node keeps its
// nodes.conf in the temp dir, so a node restarted there rejoins with its slots and no data.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eventually } from './services.js';

export interface PrivateCluster {
  /** host:port,… for REDIS_CLUSTER_NODES. */
  readonly nodes: string;
  readonly ports: readonly number[];
  /** SIGKILL of one node (nothing saved). */
  kill(port: number): Promise<void>;
  /** Starts a killed node again, empty, with its cluster identity; waits for the cluster. */
  restart(port: number): Promise<void>;
  stop(): Promise<void>;
}

const run = (command: string, args: readonly string[]): Promise<number | null> =>
  new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'ignore' });
    child.on('exit', resolve);
    child.on('error', () => resolve(-1));
  });

const output = (command: string, args: readonly string[]): Promise<string> =>
  new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
    child.on('exit', () => resolve(text));
    child.on('error', () => resolve(''));
  });

/** Three masters on random ports (their cluster bus on port + 10000). */
export async function startPrivateCluster(
  settings: { nodeTimeoutMs?: number; fullCoverage?: boolean } = {},
): Promise<PrivateCluster> {
  // Ports and their cluster bus ports (+10000) stay below 32768, where the kernel's ephemeral
  // ports begin: a bus port taken by some outgoing connection would stop a node from starting.
  const base = 20_000 + Math.floor(Math.random() * 270) * 10;
  const ports = [base, base + 1, base + 2];
  const dir = mkdtempSync(path.join(tmpdir(), 'gw-private-cluster-'));
  const servers = new Map<number, ChildProcess>();

  const start = async (port: number): Promise<void> => {
    const server = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--cluster-node-timeout',
        String(settings.nodeTimeoutMs ?? 1000),
        '--cluster-require-full-coverage',
        settings.fullCoverage === false ? 'no' : 'yes',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
      ],
      { stdio: 'ignore' },
    );
    servers.set(port, server);
    await eventually(
      async () => ((await run('redis-cli', ['-p', String(port), 'ping'])) === 0 ? true : undefined),
      30_000,
    );
  };
  const healthy = async (): Promise<true | undefined> => {
    for (const port of ports) {
      const info = await output('redis-cli', ['-p', String(port), 'cluster', 'info']);
      if (!info.includes('cluster_state:ok') || !info.includes('cluster_known_nodes:3')) {
        return undefined;
      }
    }
    return true;
  };

  const kill = async (port: number): Promise<void> => {
    const server = servers.get(port);
    if (!server || server.exitCode !== null || server.signalCode !== null) return;
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGKILL');
    await exited;
  };
  try {
    await Promise.all(ports.map(start));
    const created = await run('redis-cli', [
      '--cluster',
      'create',
      ...ports.map((port) => `127.0.0.1:${port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    if (created !== 0) throw new Error('redis-cli --cluster create failed');
    await eventually(healthy, 30_000, 100);
  } catch (error) {
    await Promise.all(ports.map(kill)); // never leave a half-made cluster behind
    throw error;
  }

  return {
    nodes: ports.map((port) => `127.0.0.1:${port}`).join(','),
    ports,
    kill,
    async restart(port) {
      await start(port);
      await eventually(healthy, 20_000, 100);
    },
    async stop() {
      await Promise.all(ports.map(kill));
    },
  };
}
