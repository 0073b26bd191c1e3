//! KV payloads: the data frames of a PS-lite KV message, `keys` (`u64`),
//! `vals` (elements of the value type) and optional `lens` (`i32`, values
//! per key), all in the sender's byte order (little endian here).
//!
//! [`KvView::parse`] checks the structure (PS-lite's own `CHECK`s and what
//! its slicer assumes): 2 or 3 frames typed UINT64, any, INT32; frame
//! sizes multiples of the element widths; keys in non-decreasing order;
//! one non-negative len per key.
//!
//! [`KvView::check_values`] checks how the values divide among the keys:
//! the lens add up to the number of values, or without lens every key has
//! the same number. `KVWorker`'s slicer guarantees that for every push
//! request, but PS-lite never checks it on responses, and MXNet 1.9.1's
//! row_sparse pull responses break it (lens count floats, `vals` is typed
//! `char`). A request with empty `vals` (a pull) passes.
//!
//! MXNet's row_sparse pushes repeat a key: the first key is the array's
//! key with len 0, then one key per row (`key + row`), so row 0 repeats
//! it. Keys are therefore only required not to decrease.

use crate::data_type::DataType;
use crate::error::{Error, Result};

fn u64_at(b: &[u8], i: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[8 * i..8 * i + 8]);
    u64::from_le_bytes(a)
}

fn i32_at(b: &[u8], i: usize) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[4 * i..4 * i + 4]);
    i32::from_le_bytes(a)
}

fn check_size(frame: &'static str, len: usize, width: usize) -> Result<()> {
    if !len.is_multiple_of(width) {
        return Err(Error::FrameSize { frame, len, width });
    }
    Ok(())
}

fn check_type(frame: &'static str, found: DataType, expected: DataType) -> Result<()> {
    if found != expected {
        return Err(Error::KvFrameType {
            frame,
            found,
            expected,
        });
    }
    Ok(())
}

/// A checked, zero-copy view of KV data frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvView<'a> {
    keys: &'a [u8],
    vals: &'a [u8],
    lens: Option<&'a [u8]>,
    val_type: DataType,
}

impl<'a> KvView<'a> {
    /// Checks the data frames of a KV message against its data types (the
    /// structure; see [`KvView::check_values`] for the values).
    pub fn parse(data_types: &[DataType], frames: &[&'a [u8]]) -> Result<KvView<'a>> {
        if frames.len() != data_types.len() {
            return Err(Error::FrameCountMismatch {
                frames: frames.len(),
                types: data_types.len(),
            });
        }
        if !(2..=3).contains(&frames.len()) {
            return Err(Error::KvFrameCount(frames.len()));
        }
        check_type("keys", data_types[0], DataType::Uint64)?;
        let val_type = data_types[1];
        if let Some(&t) = data_types.get(2) {
            check_type("lens", t, DataType::Int32)?;
        }
        let view = KvView {
            keys: frames[0],
            vals: frames[1],
            lens: frames.get(2).copied(),
            val_type,
        };
        view.check_structure()?;
        Ok(view)
    }

    fn check_structure(&self) -> Result<()> {
        check_size("keys", self.keys.len(), 8)?;
        check_size("vals", self.vals.len(), self.val_type.width())?;
        let n = self.num_keys();
        for i in 1..n {
            if u64_at(self.keys, i) < u64_at(self.keys, i - 1) {
                return Err(Error::KeysNotSorted { index: i });
            }
        }
        if let Some(lens) = self.lens {
            check_size("lens", lens.len(), 4)?;
            if lens.len() / 4 != n {
                return Err(Error::LensCountMismatch {
                    keys: n,
                    lens: lens.len() / 4,
                });
            }
            for i in 0..n {
                let len = i32_at(lens, i);
                if len < 0 {
                    return Err(Error::NegativeLen { index: i, len });
                }
            }
        }
        Ok(())
    }

    /// Checks that the values divide among the keys: by lens, or evenly
    /// without lens. Empty `vals` (a pull request) always passes.
    pub fn check_values(&self) -> Result<()> {
        let n = self.num_keys();
        let vals = self.num_vals();
        if vals == 0 {
            return Ok(());
        }
        match self.lens {
            Some(lens) => {
                let sum: u64 = (0..n).map(|i| i32_at(lens, i) as u64).sum();
                if sum != vals as u64 {
                    return Err(Error::LensSumMismatch { sum, vals });
                }
            }
            None => {
                if n == 0 || !vals.is_multiple_of(n) {
                    return Err(Error::ValsPerKeyMismatch { keys: n, vals });
                }
            }
        }
        Ok(())
    }

    /// Number of keys.
    pub fn num_keys(&self) -> usize {
        self.keys.len() / 8
    }

    /// Key `i` (panics if out of range).
    pub fn key(&self, i: usize) -> u64 {
        u64_at(self.keys, i)
    }

    /// The keys in order.
    pub fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.num_keys()).map(move |i| self.key(i))
    }

    /// The value type.
    pub fn val_type(&self) -> DataType {
        self.val_type
    }

    /// Number of values (elements of the value type).
    pub fn num_vals(&self) -> usize {
        self.vals.len() / self.val_type.width()
    }

    /// The value bytes.
    pub fn vals(&self) -> &'a [u8] {
        self.vals
    }

    /// Whether there is a `lens` frame.
    pub fn has_lens(&self) -> bool {
        self.lens.is_some()
    }

    /// The lens in order, if any.
    pub fn lens(&self) -> Option<impl Iterator<Item = i32> + '_> {
        self.lens
            .map(|l| (0..l.len() / 4).map(move |i| i32_at(l, i)))
    }

    /// Values per key without lens (0 for an empty `vals`).
    fn per_key(&self) -> usize {
        match self.num_keys() {
            0 => 0,
            n => self.num_vals() / n,
        }
    }

    /// Each key with its values (bytes) and its len entry (`None` without
    /// lens), after [`KvView::check_values`]. With empty `vals` (a pull
    /// request) every value slice is empty.
    pub fn entries(&self) -> Result<impl Iterator<Item = (u64, &'a [u8], Option<i32>)> + '_> {
        self.check_values()?;
        Ok(self.entries_of(self.val_type.width()))
    }

    /// The bytes one unit of `lens` counts in a server's answer: the value
    /// type's width when the lens add up to the values
    /// ([`KvView::check_values`]); for MXNet 1.9.1's pull answers, whose
    /// `vals` is typed `char` while their lens count the array's elements, the
    /// element's width (2, 4 or 8 bytes: `vals` bytes over the lens' sum, when
    /// it divides). Anything else is the [`KvView::check_values`] error.
    pub fn answer_len_unit(&self) -> Result<usize> {
        let width = self.val_type.width();
        let strict = self.check_values();
        let (Err(_), Some(lens), 1) = (&strict, self.lens, width) else {
            return strict.map(|()| width);
        };
        let sum: u64 = (0..self.num_keys()).map(|i| i32_at(lens, i) as u64).sum();
        let bytes = self.vals.len() as u64;
        match (sum > 0 && bytes.is_multiple_of(sum)).then(|| bytes / sum) {
            Some(unit @ (2 | 4 | 8)) => Ok(unit as usize),
            _ => strict.map(|()| width),
        }
    }

    /// [`KvView::entries`] of a server's answer, whose lens may count in
    /// units of [`KvView::answer_len_unit`] bytes (MXNet's pull answers).
    pub fn answer_entries(
        &self,
    ) -> Result<impl Iterator<Item = (u64, &'a [u8], Option<i32>)> + '_> {
        let unit = self.answer_len_unit()?;
        Ok(self.entries_of(unit))
    }

    /// The entries when a len counts `width` bytes (the values checked).
    fn entries_of(&self, width: usize) -> impl Iterator<Item = (u64, &'a [u8], Option<i32>)> + '_ {
        let has_vals = !self.vals.is_empty();
        let per_key = self.per_key();
        let mut at = 0usize;
        (0..self.num_keys()).map(move |i| {
            let len = self.lens.map(|l| i32_at(l, i));
            let count = if has_vals {
                len.map_or(per_key, |l| l as usize)
            } else {
                0
            };
            let bytes = &self.vals[at..at + count * width];
            at += count * width;
            (self.key(i), bytes, len)
        })
    }

    /// An owned copy.
    pub fn to_owned(&self) -> KvData {
        KvData {
            keys: self.keys().collect(),
            vals: self.vals.to_vec(),
            lens: self.lens().map(|l| l.collect()),
            val_type: self.val_type,
        }
    }
}

/// Owned KV data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvData {
    /// Keys, non-decreasing.
    pub keys: Vec<u64>,
    /// Value bytes.
    pub vals: Vec<u8>,
    /// Values per key, if the message carries lens.
    pub lens: Option<Vec<i32>>,
    /// The value type.
    pub val_type: DataType,
}

impl KvData {
    /// Empty data of a value type, with or without lens.
    pub fn empty(val_type: DataType, with_lens: bool) -> KvData {
        KvData {
            keys: Vec::new(),
            vals: Vec::new(),
            lens: with_lens.then(Vec::new),
            val_type,
        }
    }

    /// Parses and checks data frames, structure and values (see
    /// [`KvView::parse`] and [`KvView::check_values`]).
    pub fn parse(data_types: &[DataType], frames: &[&[u8]]) -> Result<KvData> {
        let view = KvView::parse(data_types, frames)?;
        view.check_values()?;
        Ok(view.to_owned())
    }

    /// Number of values.
    pub fn num_vals(&self) -> usize {
        self.vals.len() / self.val_type.width()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The data types of the frames (UINT64, value type, INT32 with lens).
    pub fn data_types(&self) -> Vec<DataType> {
        let mut t = vec![DataType::Uint64, self.val_type];
        if self.lens.is_some() {
            t.push(DataType::Int32);
        }
        t
    }

    /// The frames: keys, vals and lens if any.
    pub fn frames(&self) -> Vec<Vec<u8>> {
        let mut keys = Vec::with_capacity(8 * self.keys.len());
        for k in &self.keys {
            keys.extend_from_slice(&k.to_le_bytes());
        }
        let mut frames = vec![keys, self.vals.clone()];
        if let Some(lens) = &self.lens {
            let mut l = Vec::with_capacity(4 * lens.len());
            for x in lens {
                l.extend_from_slice(&x.to_le_bytes());
            }
            frames.push(l);
        }
        frames
    }

    /// Total bytes of the frames (PS-lite's `data_size`).
    pub fn data_size(&self) -> usize {
        8 * self.keys.len() + self.vals.len() + self.lens.as_ref().map_or(0, |l| 4 * l.len())
    }

    /// Runs the same checks as parsing.
    pub fn check(&self) -> Result<()> {
        let frames = self.frames();
        let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
        KvView::parse(&self.data_types(), &refs)?.check_values()
    }

    /// The same keys and lens with every value byte zero (the "other
    /// workers" of an aggregate presented as per-worker pushes).
    pub fn zeroed(&self) -> KvData {
        KvData {
            vals: vec![0; self.vals.len()],
            ..self.clone()
        }
    }

    /// Appends one key with its value bytes (and its len if this data has
    /// lens: the number of values in `vals`).
    pub fn push_entry(&mut self, key: u64, vals: &[u8]) {
        self.keys.push(key);
        self.vals.extend_from_slice(vals);
        if let Some(lens) = &mut self.lens {
            lens.push((vals.len() / self.val_type.width()) as i32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(keys: &[u64], vals: &[f32], lens: Option<&[i32]>) -> Vec<Vec<u8>> {
        let d = KvData {
            keys: keys.to_vec(),
            vals: vals.iter().flat_map(|v| v.to_le_bytes()).collect(),
            lens: lens.map(|l| l.to_vec()),
            val_type: DataType::Float,
        };
        d.frames()
    }

    fn parse(types: &[DataType], f: &[Vec<u8>]) -> Result<KvData> {
        let refs: Vec<&[u8]> = f.iter().map(|x| &x[..]).collect();
        KvData::parse(types, &refs)
    }

    const KV: [DataType; 2] = [DataType::Uint64, DataType::Float];
    const KVL: [DataType; 3] = [DataType::Uint64, DataType::Float, DataType::Int32];

    #[test]
    fn good_data_round_trips() {
        let f = frames(&[1, 5, 9], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], None);
        let d = parse(&KV, &f).unwrap();
        assert_eq!(d.frames(), f);
        assert_eq!(d.data_size(), 24 + 24);
        let f = frames(&[1, 5], &[1.0, 2.0, 3.0], Some(&[1, 2]));
        let refs: Vec<&[u8]> = f.iter().map(|x| &x[..]).collect();
        let v = KvView::parse(&KVL, &refs).unwrap();
        let e: Vec<_> = v
            .entries()
            .unwrap()
            .map(|(k, b, l)| (k, b.len(), l))
            .collect();
        assert_eq!(e, [(1, 4, Some(1)), (5, 8, Some(2))]);
        let pull = frames(&[1, 2], &[], None);
        assert!(parse(&KV, &pull).is_ok());
    }

    #[test]
    fn every_defect_has_its_error() {
        let f = frames(&[1, 2], &[1.0, 2.0], None);
        assert_eq!(
            parse(&KVL, &f),
            Err(Error::FrameCountMismatch {
                frames: 2,
                types: 3
            })
        );
        assert_eq!(
            parse(&[DataType::Uint64], &f[..1]),
            Err(Error::KvFrameCount(1))
        );
        assert_eq!(
            parse(&[DataType::Int64, DataType::Float], &f),
            Err(Error::KvFrameType {
                frame: "keys",
                found: DataType::Int64,
                expected: DataType::Uint64
            })
        );
        let mut g = f.clone();
        g.push(vec![0; 8]);
        assert_eq!(
            parse(&[DataType::Uint64, DataType::Float, DataType::Uint32], &g),
            Err(Error::KvFrameType {
                frame: "lens",
                found: DataType::Uint32,
                expected: DataType::Int32
            })
        );
        let mut g = f.clone();
        g[0].pop();
        assert_eq!(
            parse(&KV, &g),
            Err(Error::FrameSize {
                frame: "keys",
                len: 15,
                width: 8
            })
        );
        let mut g = f.clone();
        g[1].pop();
        assert_eq!(
            parse(&KV, &g),
            Err(Error::FrameSize {
                frame: "vals",
                len: 7,
                width: 4
            })
        );
        assert_eq!(
            parse(&KV, &frames(&[3, 2], &[1.0, 2.0], None)),
            Err(Error::KeysNotSorted { index: 1 })
        );
        assert!(parse(&KV, &frames(&[2, 2], &[1.0, 2.0], None)).is_ok());
        assert_eq!(
            parse(&KV, &frames(&[1, 2], &[1.0, 2.0, 3.0], None)),
            Err(Error::ValsPerKeyMismatch { keys: 2, vals: 3 })
        );
        assert_eq!(
            parse(&KV, &frames(&[], &[1.0], None)),
            Err(Error::ValsPerKeyMismatch { keys: 0, vals: 1 })
        );
        assert_eq!(
            parse(&KVL, &frames(&[1, 2], &[1.0, 2.0], Some(&[2]))),
            Err(Error::LensCountMismatch { keys: 2, lens: 1 })
        );
        assert_eq!(
            parse(&KVL, &frames(&[1, 2], &[1.0, 2.0], Some(&[3, -1]))),
            Err(Error::NegativeLen { index: 1, len: -1 })
        );
        assert_eq!(
            parse(&KVL, &frames(&[1, 2], &[1.0, 2.0], Some(&[2, 1]))),
            Err(Error::LensSumMismatch { sum: 3, vals: 2 })
        );
        let mut g = frames(&[1], &[1.0], Some(&[1]));
        g[2].push(0);
        assert_eq!(
            parse(&KVL, &g),
            Err(Error::FrameSize {
                frame: "lens",
                len: 5,
                width: 4
            })
        );
    }

    /// An answer's lens count the value type's elements; MXNet's count the array's
    /// elements of `char` vals (2, 4 or 8 bytes each); any other sum is an error.
    #[test]
    fn an_answers_lens_may_count_the_arrays_elements() {
        let view = |types: &[DataType], f: &[Vec<u8>]| -> Result<usize> {
            let refs: Vec<&[u8]> = f.iter().map(|x| &x[..]).collect();
            KvView::parse(types, &refs)?.answer_len_unit()
        };
        assert_eq!(
            view(&KVL, &frames(&[1, 2], &[1.0, 2.0, 3.0], Some(&[1, 2]))),
            Ok(4)
        );
        const CHAR: [DataType; 3] = [DataType::Uint64, DataType::Int8, DataType::Int32];
        let mut f = frames(&[1, 2], &[1.0, 2.0, 3.0], Some(&[1, 2]));
        assert_eq!(
            view(&CHAR, &f),
            Ok(4),
            "3 floats as 12 chars, lens in floats"
        );
        f[2] = [0i32, 6].iter().flat_map(|l| l.to_le_bytes()).collect();
        assert_eq!(view(&CHAR, &f), Ok(2), "lens in halves");
        f[2] = [12i32, 0].iter().flat_map(|l| l.to_le_bytes()).collect();
        assert_eq!(view(&CHAR, &f), Ok(1), "lens in bytes");
        f[2] = [1i32, 3].iter().flat_map(|l| l.to_le_bytes()).collect();
        assert_eq!(
            view(&CHAR, &f),
            Err(Error::LensSumMismatch { sum: 4, vals: 12 }),
            "3 bytes an element is no type"
        );
        f[2] = [5i32, 2].iter().flat_map(|l| l.to_le_bytes()).collect();
        assert_eq!(
            view(&CHAR, &f),
            Err(Error::LensSumMismatch { sum: 7, vals: 12 })
        );
        // A float-typed answer whose lens do not add up is not reinterpreted.
        assert_eq!(
            view(&KVL, &frames(&[1, 2], &[1.0, 2.0, 3.0], Some(&[0, 1]))),
            Err(Error::LensSumMismatch { sum: 1, vals: 3 })
        );
    }

    #[test]
    fn push_entry_keeps_lens() {
        let mut d = KvData::empty(DataType::Float, true);
        d.push_entry(3, &[0; 8]);
        d.push_entry(4, &[]);
        assert_eq!(d.lens, Some(vec![2, 0]));
        assert!(d.check().is_ok());
    }
}
