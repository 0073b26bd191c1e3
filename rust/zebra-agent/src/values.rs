//! Which PS-lite value types carry `f32` gradients, and their bytes.

use zebra_pslite::DataType;

use crate::config::OtherValues;

/// Bytes of one `f32` value, whether typed `FLOAT` or raw bytes (`OTHER`).
pub const F32_BYTES: usize = 4;

/// Whether pushes with values of type `t` can be aggregated: `FLOAT`, and
/// `OTHER` when configured to hold `f32`.
pub fn aggregatable(t: DataType, other: OtherValues) -> bool {
    match t {
        DataType::Float => true,
        DataType::Other => other == OtherValues::F32,
        _ => false,
    }
}

/// The values of a little-endian `f32` byte slice (a length that is not a
/// multiple of 4 leaves the tail out; callers check it first).
pub fn decode(bytes: &[u8]) -> impl Iterator<Item = f32> + '_ {
    bytes
        .chunks_exact(F32_BYTES)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

/// Little-endian bytes of `values`.
pub fn encode(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_and_bytes() {
        assert!(aggregatable(DataType::Float, OtherValues::Opaque));
        assert!(aggregatable(DataType::Other, OtherValues::F32));
        assert!(!aggregatable(DataType::Other, OtherValues::Opaque));
        assert!(!aggregatable(DataType::Double, OtherValues::F32));
        let b = encode(&[1.0, -2.5]);
        assert_eq!(decode(&b).collect::<Vec<_>>(), [1.0, -2.5]);
    }
}
