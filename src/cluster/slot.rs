//! Hash slots: CRC16 (XMODEM: polynomial 0x1021, initial value 0) of the
//! key, or of its hash tag, modulo 16384 — Redis Cluster's `keyHashSlot`.

/// The number of hash slots.
pub const SLOTS: usize = 16384;

/// CRC16/XMODEM table, built when the crate compiles.
const TABLE: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
            bit += 1;
        }
        t[i] = crc;
        i += 1;
    }
    t
};

/// CRC16/XMODEM of `data`.
pub fn crc16(data: &[u8]) -> u16 {
    data.iter().fold(0u16, |crc, &b| (crc << 8) ^ TABLE[usize::from((crc >> 8) as u8 ^ b)])
}

/// The part of `key` that is hashed: what lies between the first `{` and
/// the first `}` after it, when that is not empty; else the whole key.
pub fn hash_tag(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&c| c == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&c| c == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// The hash slot of `key`.
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) & (SLOTS as u16 - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_check_value() {
        // The standard check input of CRC-16/XMODEM.
        assert_eq!(crc16(b"123456789"), 0x31c3);
    }

    #[test]
    fn tags() {
        assert_eq!(hash_tag(b"{user1000}.following"), b"user1000");
        assert_eq!(hash_tag(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hash_tag(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hash_tag(b"foo{bar}{zap}"), b"bar");
        assert_eq!(hash_tag(b"{"), b"{");
        assert_eq!(key_slot(b"{a}x"), key_slot(b"a"));
    }
}
