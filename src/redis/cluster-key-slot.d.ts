// Types of cluster-key-slot (the CRC16 slot function ioredis itself routes with; it ships none).
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot (0–16383) of a key: CRC16 of its hash tag, mod 16384. */
  export default function calculateSlot(key: string | Buffer): number;
}
